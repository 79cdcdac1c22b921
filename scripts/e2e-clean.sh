#!/usr/bin/env bash
# Removes what the container tests (test/e2e) may leave behind when their
# process is killed before its cleanups run: containers (with their
# volumes) and networks labelled cosmosd-e2e. With --images it also removes
# the cached cosmosd-e2e images. Do not run it while an e2e run is going:
# it removes that run's containers too.
set -euo pipefail
containers=$(docker ps -aq --filter label=cosmosd-e2e)
if [ -n "$containers" ]; then
	# shellcheck disable=SC2086
	docker rm -f -v $containers >/dev/null
	echo "removed $(echo "$containers" | wc -l) containers"
fi
networks=$(docker network ls -q --filter label=cosmosd-e2e)
if [ -n "$networks" ]; then
	# shellcheck disable=SC2086
	docker network rm $networks >/dev/null
	echo "removed $(echo "$networks" | wc -l) networks"
fi
if [ "${1:-}" = "--images" ]; then
	images=$(docker images -q cosmosd-e2e | sort -u)
	if [ -n "$images" ]; then
		# shellcheck disable=SC2086
		docker rmi -f $images >/dev/null
		echo "removed $(echo "$images" | wc -l) images"
	fi
fi
