package nemesis

const (
	// suite labels every Docker resource of the suite (see dockertest).
	suite = "cosmosd-nemesis"
	// imageRepo is the repository of the suite's cached image
	// (dockertest.Build).
	imageRepo = "cosmosd-nemesis"
)
