"""Learning-rate schedules: callables from the optimizer step to a learning rate."""
import math


class LearningRateSchedule:
    """Base class: subclasses implement ``__call__(step) -> float`` and ``get_config``."""

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step).")

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config().")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``.

    staircase: use the integer part of ``step / decay_steps``.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = staircase
        self.name = name

    def __call__(self, step):
        progress = float(step) / self.decay_steps
        if self.staircase:
            progress = math.floor(progress)
        return float(self.initial_learning_rate) * float(self.decay_rate) ** progress

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "decay_rate": self.decay_rate,
            "staircase": self.staircase,
            "name": self.name,
        }


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[1]`` up to ``boundaries[1]``, ...

    boundaries: strictly increasing steps.
    values: one more entry than ``boundaries``.
    """

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "The length of boundaries should be 1 less than the length of values. "
                f"Received: boundaries={boundaries} of length {len(boundaries)}, "
                f"and values={values} of length {len(values)}."
            )
        self.boundaries = list(boundaries)
        self.values = list(values)
        self.name = name

    def __call__(self, step):
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return float(value)
        return float(self.values[-1])

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Optional linear warmup, then cosine decay over ``decay_steps``.

    Without ``warmup_target`` the rate decays from ``initial_learning_rate`` to
    ``initial_learning_rate * alpha``. With it, the rate first rises linearly
    from ``initial_learning_rate`` to ``warmup_target`` over ``warmup_steps``,
    then decays from ``warmup_target`` to ``warmup_target * alpha``.
    """

    def __init__(
        self,
        initial_learning_rate,
        decay_steps,
        alpha=0.0,
        name="CosineDecay",
        warmup_target=None,
        warmup_steps=0,
    ):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.alpha = alpha
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps

    def _decay(self, step, decay_from):
        cosine = 0.5 * (1.0 + math.cos(math.pi * step / self.decay_steps))
        return decay_from * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        step = float(step)
        initial = float(self.initial_learning_rate)
        if self.warmup_target is None:
            return self._decay(min(step, self.decay_steps), initial)
        target = float(self.warmup_target)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            return (target - initial) * (step / self.warmup_steps) + initial
        return self._decay(step - self.warmup_steps, target)

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "decay_steps": self.decay_steps,
            "alpha": self.alpha,
            "name": self.name,
            "warmup_target": self.warmup_target,
            "warmup_steps": self.warmup_steps,
        }


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` over ``decay_steps``:
    ``(initial - end) * (1 - step / decay_steps) ** power + end``, then ``end_learning_rate``.

    cycle: instead of staying at the end, decay again over the first multiple of ``decay_steps`` at or past
        ``step``.
    """

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.end_learning_rate = end_learning_rate
        self.power = power
        self.cycle = cycle
        self.name = name

    def __call__(self, step):
        step, decay_steps = float(step), float(self.decay_steps)
        if self.cycle:
            decay_steps *= 1.0 if step == 0 else math.ceil(step / decay_steps)
        else:
            step = min(step, decay_steps)
        end = float(self.end_learning_rate)
        return (float(self.initial_learning_rate) - end) * (1.0 - step / decay_steps) ** float(self.power) + end

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(ExponentialDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``.

    staircase: use the integer part of ``step / decay_steps``. The arguments and config are ExponentialDecay's.
    """

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase=staircase, name=name)

    def __call__(self, step):
        progress = float(step) / self.decay_steps
        if self.staircase:
            progress = math.floor(progress)
        return float(self.initial_learning_rate) / (1.0 + float(self.decay_rate) * progress)


class CosineDecayRestarts(LearningRateSchedule):
    """Cosine decay with warm restarts (SGDR): a cosine from ``initial_learning_rate`` down to
    ``initial_learning_rate * alpha`` over ``first_decay_steps``, then again over a period ``t_mul`` times
    longer, starting ``m_mul`` times lower, and so on.
    """

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0,
                 name="SGDRDecay"):
        if first_decay_steps <= 0:
            raise ValueError("Argument `first_decay_steps` must be > 0. "
                             f"Received: first_decay_steps={first_decay_steps}")
        self.initial_learning_rate = initial_learning_rate
        self.first_decay_steps = first_decay_steps
        self._t_mul = t_mul
        self._m_mul = m_mul
        self.alpha = alpha
        self.name = name

    def __call__(self, step):
        fraction = float(step) / float(self.first_decay_steps)
        t_mul = float(self._t_mul)
        if t_mul == 1.0:
            restart = math.floor(fraction)
            fraction -= restart
        else:
            restart = math.floor(math.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            fraction = (fraction - (1.0 - t_mul**restart) / (1.0 - t_mul)) / t_mul**restart
        cosine = 0.5 * float(self._m_mul) ** restart * (1.0 + math.cos(math.pi * fraction))
        alpha = float(self.alpha)
        return float(self.initial_learning_rate) * ((1.0 - alpha) * cosine + alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_CLASSES = {cls.__name__: cls for cls in (ExponentialDecay, PiecewiseConstantDecay, CosineDecay,
                                          PolynomialDecay, InverseTimeDecay, CosineDecayRestarts)}


def serialize(schedule):
    """Return ``{"class_name": ..., "config": ...}`` for a schedule."""
    if not isinstance(schedule, LearningRateSchedule):
        raise ValueError(f"Expected a LearningRateSchedule, received {schedule!r}.")
    return {
        "module": "kgraph.optimizers.schedules",
        "class_name": type(schedule).__name__,
        "config": schedule.get_config(),
    }


def deserialize(config, custom_objects=None):
    """Rebuild a schedule from ``serialize``'s output.

    custom_objects: ``{class_name: class}`` for user-defined schedules.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Expected a dict with 'class_name' and 'config', received {config!r}.")
    cls = (custom_objects or {}).get(config["class_name"]) or _CLASSES.get(config["class_name"])
    if cls is None:
        raise ValueError(
            f"Unknown learning rate schedule {config['class_name']!r}. Expected one of {sorted(_CLASSES)}."
        )
    return cls.from_config(dict(config.get("config", {})))
