"""Augmentation policies built from other augmentation layers (RandAugment, AugMix).

Both hold one instance of each augmentation they may apply, made with the
policy's strength ``factor``, value range and interpolation, and run them on
channels-last batches in training; at inference they are identities.
"""
from kgraph import ops
from kgraph.layers.preprocessing.augmentation.basic import _RandomLayer, factor_range

__all__ = ["AugMix", "RandAugment"]

_GEOMETRIC_AND_TONE = ("random_shear", "random_translation", "random_rotation", "random_posterization",
                       "solarization", "auto_contrast", "equalization")
_COLOR = ("random_brightness", "random_color_degeneration", "random_contrast", "random_sharpness")


def _augmenters(names, factor, value_range, interpolation, seed, dtype):
    """The augmentation layers called ``names`` (Keras's attribute names), each made for a channels-last batch."""
    from kgraph import layers
    common = {"seed": seed, "data_format": "channels_last", "dtype": dtype}
    makers = {
        "random_shear": lambda: layers.RandomShear(x_factor=factor, y_factor=factor, interpolation=interpolation,
                                                   **common),
        "random_translation": lambda: layers.RandomTranslation(factor, factor, interpolation=interpolation, **common),
        "random_rotation": lambda: layers.RandomRotation(factor, interpolation=interpolation, **common),
        "random_brightness": lambda: layers.RandomBrightness(factor, value_range=value_range, **common),
        "random_color_degeneration": lambda: layers.RandomColorDegeneration(factor, value_range=value_range,
                                                                            **common),
        "random_contrast": lambda: layers.RandomContrast(factor, value_range=value_range, **common),
        "random_sharpness": lambda: layers.RandomSharpness(factor, value_range=value_range, **common),
        "random_posterization": lambda: layers.RandomPosterization(max(1, int(8 * factor[1])),
                                                                   value_range=value_range, **common),
        "solarization": lambda: layers.Solarization(addition_factor=factor, threshold_factor=factor,
                                                    value_range=value_range, **common),
        "auto_contrast": lambda: layers.AutoContrast(value_range=value_range, data_format="channels_last",
                                                     dtype=dtype),
        "equalization": lambda: layers.Equalization(value_range=value_range, data_format="channels_last",
                                                    dtype=dtype),
    }
    return {name: makers[name]() for name in names}


def _check_interpolation(interpolation):
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("The `interpolation` argument should be one of ('nearest', 'bilinear'). "
                         f"Received: interpolation={interpolation}")


def _positive_int(name, value, minimum):
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"The `{name}` argument should be an integer >= {minimum}. Received: {name}={value}")


class RandAugment(_RandomLayer):
    """Applies ``num_ops`` augmentations drawn at random (the same draw for the whole batch) one after another.

    The candidates are Keras's: shear, translation, rotation, brightness, color degeneration, contrast, sharpness,
    posterization, solarization, auto-contrast and equalization, each with strength ``factor``.
    """

    _OPS = ("random_shear", "random_translation", "random_rotation", "random_brightness",
            "random_color_degeneration", "random_contrast", "random_sharpness", "random_posterization",
            "solarization", "auto_contrast", "equalization")

    def __init__(self, value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear", seed=None,
                 data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        _positive_int("num_ops", num_ops, 0)
        _check_interpolation(interpolation)
        self.value_range = value_range
        self.num_ops = num_ops
        self.factor = factor_range("factor", factor, (0, 1))
        self.interpolation = interpolation
        self._ops = _augmenters(self._OPS, self.factor, value_range, interpolation, seed, self.dtype)

    def augment(self, x):
        names = list(self._ops)
        return self.apply_ops(x, [names[i] for i in self.rng.integers(0, len(names), size=self.num_ops)])

    def apply_ops(self, x, names):
        """``x`` (a channels-last batch) through the augmentations ``names`` (Keras's attribute names), in order."""
        for name in names:
            x = self._ops[name](x, training=True)
        return x

    def get_config(self):
        config = super().get_config()
        config.update({"value_range": self.value_range, "num_ops": self.num_ops, "factor": self.factor,
                       "interpolation": self.interpolation})
        return config


class AugMix(_RandomLayer):
    """AugMix: ``num_chains`` chains of up to ``chain_depth`` random augmentations, mixed with the original.

    The chains' outputs are averaged with Dirichlet(``alpha``) weights; the result is mixed with the input by a
    Beta(``alpha``, ``alpha``) weight and clipped to ``value_range``. Each chain step picks one augmentation or none,
    uniformly; ``all_ops=False`` leaves out the color augmentations (brightness, color degeneration, contrast,
    sharpness).
    """

    def __init__(self, value_range=(0, 255), num_chains=3, chain_depth=3, factor=0.3, alpha=1.0, all_ops=True,
                 interpolation="bilinear", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        _positive_int("num_chains", num_chains, 1)
        _positive_int("chain_depth", chain_depth, 0)
        _check_interpolation(interpolation)
        if not alpha > 0:
            raise ValueError(f"The `alpha` argument should be a positive number. Received: alpha={alpha}")
        self.value_range = value_range
        self.num_chains = num_chains
        self.chain_depth = chain_depth
        self.factor = factor_range("factor", factor, (0, 1))
        self.alpha = alpha
        self.all_ops = all_ops
        self.interpolation = interpolation
        names = _GEOMETRIC_AND_TONE + (_COLOR if all_ops else ())
        self._ops = _augmenters(names, self.factor, value_range, interpolation, seed, self.dtype)

    def augment(self, x):
        names = list(self._ops) + [None]
        chain_weights = self.rng.dirichlet([self.alpha] * self.num_chains)
        keep = float(self.rng.beta(self.alpha, self.alpha))
        mixed = None
        for weight in chain_weights:
            chain = x
            for index in self.rng.integers(0, len(names), size=self.chain_depth):
                if names[index] is not None:
                    chain = self._ops[names[index]](chain, training=True)
            term = ops.multiply(chain, ops.cast(weight, x.dtype))
            mixed = term if mixed is None else ops.add(mixed, term)
        out = ops.add(ops.multiply(x, ops.cast(keep, x.dtype)), ops.multiply(mixed, ops.cast(1 - keep, x.dtype)))
        return ops.clip(out, self.value_range[0], self.value_range[1])

    def get_config(self):
        config = super().get_config()
        config.update({"value_range": self.value_range, "num_chains": self.num_chains,
                       "chain_depth": self.chain_depth, "factor": self.factor, "alpha": self.alpha,
                       "all_ops": self.all_ops, "interpolation": self.interpolation})
        return config
