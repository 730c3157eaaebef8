"""Activation layers: Activation and the configurable ReLU, LeakyReLU, PReLU, ELU, Softmax."""
