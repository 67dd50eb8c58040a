"""Settings, the environment, installing and removing the hook, and the public API's imports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tilec
from tilec import config as cfg
from tilec.inductor import decompositions
from tilec.ir.parser import grammar_path
from tilec.runtime import interpreter_active

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> str:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TILEC_")}
    full_env.update(env or {})
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout.strip()


def test_environment_variables_set_the_initial_values() -> None:
    code = "import tilec; c = tilec.config; print(c.emitter, c.enabled, c.strict)"
    assert run_python(code) == "auto True False"
    assert (
        run_python(code, {"TILEC_EMITTER": "Triton", "TILEC_DISABLE": "1", "TILEC_STRICT": "1"}) == "triton False True"
    )


def test_importing_tilec_and_its_config_does_not_import_torch() -> None:
    code = "import sys, tilec; tilec.config.fingerprint(); tilec.config.check(); print('torch' in sys.modules)"
    assert run_python(code) == "False"


def test_the_public_api() -> None:
    import tilec.inductor as hook

    assert tilec.backend is hook.tilec_backend
    assert (tilec.install, tilec.installed, tilec.uninstall) == (hook.install, hook.installed, hook.uninstall)
    assert (tilec.report, tilec.reset_report, tilec.KernelRecord) == (hook.report, hook.reset_report, hook.KernelRecord)
    with pytest.raises(AttributeError):
        tilec.no_such_thing  # noqa: B018


def test_the_fingerprint_covers_every_setting() -> None:
    seen = {cfg.fingerprint()}
    for change in (
        {"enabled": not cfg.enabled},
        {"emitter": "triton" if cfg.emitter != "triton" else "gluon"},
        {"strict": not cfg.strict},
        {"decline": not cfg.decline},
        {"autotune": not cfg.autotune},
        {"pipelines": {"gluon": "gluon-default", "triton": "plan,canonicalize"}},
    ):
        with cfg.patch(**change):
            seen.add(cfg.fingerprint())
    assert len(seen) == 7
    assert tilec.__version__ in cfg.fingerprint()


def test_the_fingerprint_covers_the_source(tmp_path: Path) -> None:
    """An edited module (an editable install, a local patch) changes the cache key though the
    version does not: Inductor's cache never serves code an older tilec generated."""
    import shutil

    assert f"source={cfg.source_digest()}" in cfg.fingerprint()
    root = Path(tilec.__file__).parent
    copy = tmp_path / "tilec"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__", "grammar"))
    (copy / "grammar").mkdir()
    shutil.copy(grammar_path(), copy / "grammar")
    code = "import tilec.config as c; print(c.__file__, c.source_digest())"
    before = run_python(code, cwd=tmp_path)
    assert before.startswith(str(copy))
    (copy / "ir" / "core.py").write_text((copy / "ir" / "core.py").read_text() + "\n# edited\n")
    assert run_python(code, cwd=tmp_path) != before
    assert before.split()[1] == cfg.source_digest()


def test_patch_restores_and_rejects_unknown_settings() -> None:
    before = cfg.snapshot()
    with cfg.patch(emitter="triton", strict=True):
        assert (cfg.emitter, cfg.strict) == ("triton", True)
    assert cfg.snapshot() == before
    with pytest.raises(cfg.ConfigError, match="unknown"), cfg.patch(emiter="triton"):
        pass
    with cfg.patch(emitter="nope"), pytest.raises(cfg.ConfigError, match="must be one of"):
        cfg.check()


def test_install_and_uninstall_restore_inductors_registrations() -> None:
    from torch._inductor.codegen import common

    common.init_backend_registration()
    was = tilec.is_installed("cuda")
    tilec.uninstall()
    stock = {d: (common.device_codegens[d], common.custom_backend_passes.get(d)) for d in ("cuda", "cpu")}
    order = list(common.custom_backend_passes)  # part of the FX-graph cache key
    cpu = interpreter_active()  # hooking the CPU needs Triton's interpreter
    with tilec.installed(cpu=cpu):
        assert tilec.is_installed("cuda") and tilec.is_installed("cpu") == cpu
        assert common.device_codegens["cuda"] is not stock["cuda"][0]
        assert common.custom_backend_passes["cuda"].uuid() == cfg.fingerprint()
        # the decompositions the backend replaces for a compile go into the key with the settings
        with decompositions.replaced({"embedding_dense_backward": None}):
            key = common.custom_backend_passes["cuda"].uuid()
        assert key == f"{cfg.fingerprint()} rewrites=embedding_dense_backward"
        tilec.install()  # idempotent
    assert {d: (common.device_codegens[d], common.custom_backend_passes.get(d)) for d in ("cuda", "cpu")} == stock
    assert list(common.custom_backend_passes) == order
    if was:
        tilec.install()


def test_the_backend_is_found_by_name_without_importing_tilec() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["torch_dynamo_backends"] == {"tilec": "tilec.inductor.backend:tilec_backend"}
    code = """
        import sys, torch
        f = torch.compile(lambda x: torch.softmax(x, -1), backend="tilec", dynamic=False)
        x = torch.randn(4, 10)
        torch.testing.assert_close(f(x), torch.softmax(x, -1))
        print("tilec.inductor.backend" in sys.modules)
    """
    # (outside the checkout, so that the installed distribution's metadata is the one read)
    assert run_python(code, cwd=Path("/")) == "True"


def test_the_banded_gluon_pipeline_is_optional_and_checked() -> None:
    """`pipelines["gluon-banded"]` (the Gluon pipeline of a norm's fused backward) is `gluon-ring`
    by default and where the key is absent (a dict of the two emitters' pipelines stays valid);
    given, it must be a pipeline string, as the others must."""
    assert cfg.banded_gluon_pipeline() == "gluon-ring"
    with cfg.patch(pipelines={"gluon": "gluon-default", "triton": "triton-default"}):
        cfg.check()
        assert cfg.banded_gluon_pipeline() == "gluon-ring"
    with cfg.patch(pipelines={**cfg.pipelines, "gluon-banded": "gluon-default"}):
        assert cfg.banded_gluon_pipeline() == "gluon-default"
    with (
        cfg.patch(pipelines={**cfg.pipelines, "gluon-banded": None}),
        pytest.raises(cfg.ConfigError, match="gluon-banded"),
    ):
        cfg.check()
