"""The installed distribution: its name, metadata, console scripts, licence and type markers, and install hints.

These run against the project as ``pip install -e .`` installed it (the console scripts in the environment's
``bin`` folder), as CI does.
"""
import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap

import pytest

import export
import kgraph
import serve
from export import defaults as export_defaults

DISTRIBUTION = "kgraph-engine"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
SCRIPTS = {"kgraph-export": "export", "kgraph-serve": "serve"}


def _script(name):
    path = os.path.join(BIN, name)
    assert os.path.exists(path), f"the {name} console script is missing: run pip install -e ."
    return path


def test_distribution_name_version_and_metadata():
    meta = importlib.metadata.metadata(DISTRIBUTION)
    assert meta["Name"] == DISTRIBUTION
    assert meta["Version"] == kgraph.__version__ == export.__version__ == serve.__version__
    assert meta["License-Expression"] == "Apache-2.0" and "LICENSE" in meta.get_all("License-File")
    classifiers = meta.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "Programming Language :: Python :: 3 :: Only" in classifiers
    extras = set(meta.get_all("Provides-Extra"))
    assert {"serve", "examples", "keras", "dev", "compare"} <= extras


def test_console_scripts_point_at_the_command_lines():
    points = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")
              if ep.dist is not None and ep.dist.name == DISTRIBUTION}
    assert points == {name: f"{package}.__main__:main" for name, package in SCRIPTS.items()}


def test_licence_file_and_type_markers():
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    for package in (kgraph, export, serve):
        assert os.path.isfile(os.path.join(os.path.dirname(package.__file__), "py.typed"))


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_version_and_help_in_a_folder_with_a_users_export_and_serve_modules(tmp_path, name):
    # A user's own export.py and serve.py beside them must not stand in for the packages.
    for module in ("export", "serve"):
        (tmp_path / f"{module}.py").write_text("import sys\nprint('the user module ran')\nsys.exit(7)\n")
    version = subprocess.run([_script(name), "--version"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (version.returncode, version.stdout) == (0, f"{name} {kgraph.__version__}\n")
    help_ = subprocess.run([_script(name), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert help_.returncode == 0 and help_.stdout.startswith(f"usage: {name} ")
    assert "the user module ran" not in help_.stdout + version.stdout


def test_export_console_script_imports_a_users_module_from_the_working_folder(tmp_path):
    # --import still finds modules in the working folder (where the console script does not look by itself).
    (tmp_path / "my_layers.py").write_text("raise SystemExit('my_layers was imported')\n")
    result = subprocess.run([_script("kgraph-export"), "absent.pkl", "--import", "my_layers"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "my_layers was imported" in result.stderr


@pytest.mark.parametrize("package", ["export", "serve"])
def test_help_and_version_import_neither_the_engine_nor_the_runtimes(package):
    probe = textwrap.dedent(f"""
        import runpy, sys
        for flag in ("--help", "--version"):
            sys.argv = ["{package}", flag]
            try:
                runpy.run_module("{package}", run_name="__main__")
            except SystemExit as exit:
                assert exit.code in (0, None), exit.code
        heavy = ("kgraph", "onnx", "onnxruntime", "numpy", "uvicorn", "starlette", "grpc")
        print(sorted(name for name in sys.modules if name.split(".")[0] in heavy))
    """)
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def _install_hints():
    """Every ``pip install "NAME[extra]"`` the code and the README give, with where it is."""
    hints = []
    for folder in ("kgraph", "export", "serve", "examples"):
        for root, _, names in os.walk(os.path.join(ROOT, folder)):
            hints += [os.path.join(root, name) for name in names if name.endswith(".py")]
    hints.append(os.path.join(ROOT, "README.md"))
    found = []
    for path in hints:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        found += [(os.path.relpath(path, ROOT), m.group(1), m.group(2))
                  for m in re.finditer(r"pip install (?:-e )?\\?['\"]?([\w.-]*)\[([\w,]+)\]", text)]
    return found


def test_install_hints_name_this_distribution_and_its_extras():
    extras = set(importlib.metadata.metadata(DISTRIBUTION).get_all("Provides-Extra"))
    hints = _install_hints()
    assert len(hints) >= 10
    # The exporter's hints are built from its defaults: pip install '{DISTRIBUTION}[{FP16_EXTRA}]'.
    assert export_defaults.DISTRIBUTION == DISTRIBUTION and export_defaults.FP16_EXTRA in extras
    for where, name, wanted in hints:
        assert name in (DISTRIBUTION, "."), f"{where}: pip install {name}[{wanted}] names another distribution"
        named = set(wanted.split(","))
        assert named <= extras, f"{where}: unknown extra(s) {sorted(named - extras)}"


def test_ci_runs_the_readme_s_commands():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    quick_start = re.search(r"```bash\n(python3 -m venv .venv.*)\n```", readme).group(1)
    assert 'pip install -e ".[serve,examples]"' in quick_start and "python examples/pipeline.py" in quick_start
    test_install = re.search(r"```bash\n(pip install -e \"\.\[[\w,]+\]\") && python -m pytest\n```", readme).group(1)
    assert test_install in ci and "python -m pytest" in ci


def test_exports_face_loads_its_names_on_first_use():
    probe = textwrap.dedent("""
        import sys
        import export
        assert "export.exporter" not in sys.modules and "onnx" not in sys.modules
        import export.verify  # the submodule of that name must not replace the function on the face
        from export import ExportError, to_onnx, verify
        assert callable(verify) and verify is export.verify and verify.__module__ == "export.verify"
        assert to_onnx.__module__ == "export.exporter" and issubclass(ExportError, ValueError)
        assert callable(export.registry.op_converter)  # a submodule reached through the package
        print(sorted(name for name in export.__all__ if not hasattr(export, name)))
    """)
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
