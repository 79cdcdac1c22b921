package e2e

const (
	// suite labels every Docker resource of the suite (see dockertest).
	suite = "cosmosd-e2e"
	// imageRepo is the repository of the suite's cached image
	// (dockertest.Build).
	imageRepo = "cosmosd-e2e"
)
