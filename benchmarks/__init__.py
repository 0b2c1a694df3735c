"""bytegraph's benchmarks against torch.compile: `make bench` or `python -m benchmarks.run`."""
