"""The training loop behind compile / fit / evaluate / predict, its data adapters and PyDataset."""
