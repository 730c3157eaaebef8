"""``python -m export MODEL --import path/to/train.py``: the classes a training script defined (saved from
``__main__``) resolve from the script's file, imported without running its ``if __name__ == "__main__":`` part."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent('''
    import numpy as np
    import kgraph
    from kgraph import layers, ops


    class Scale(layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return ops.multiply(x, self.factor)

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}


    if __name__ == "__main__":
        with open("trained.txt", "a") as f:
            f.write("trained\\n")
        inp = kgraph.Input((3,))
        model = kgraph.Model(inp, layers.Dense(2)(Scale(3.0)(inp)))
        model.save("model.keras")
        model.save("model.pkl")
''')


@pytest.mark.parametrize("suffix", [".keras", ".pkl"])
def test_classes_saved_from_main_resolve_from_the_script_file(tmp_path, suffix):
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=ROOT)
    subprocess.run([sys.executable, "train.py"], cwd=work, env=env, check=True, timeout=120)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    model = str(work / f"model{suffix}")
    plain = subprocess.run([sys.executable, "-m", "export", model, "-o", str(elsewhere / "a.onnx")],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300)
    assert plain.returncode != 0 and "Scale" in plain.stderr
    done = subprocess.run([sys.executable, "-m", "export", model, "--import", str(work / "train.py"), "--verify",
                           "-o", str(elsewhere / "m.onnx")], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "m.onnx").exists() and "PASS" in done.stdout
    assert (work / "trained.txt").read_text() == "trained\n"  # the script's main part ran once, in training
