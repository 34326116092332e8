"""Model ▸ Get models…: search Hugging Face, pick a file, download it with progress, then load it.

    dialog = GetModelsDialog(window)
    if dialog.exec() and dialog.downloaded_source:
        load(dialog.downloaded_source)        # the application loads it; this dialog never does

A curated list is shown before any search. Search, file listing and the download all run on daemon
threads; their results come back through a GuiRoute, so the GUI thread never waits on the network.
Closing the dialog mid-download pauses it: the partial file stays and the next download resumes it.
"""

from __future__ import annotations

import threading
from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QProgressBar, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

from engine import (DownloadProgress, HubDownload, ModelOption, SearchHit, curated_models, repo_options,
                    search_models)
from engine import DownloadStopped

from app.bridge import GuiRoute
from app.error_words import in_words
from app.models.picker import human_bytes, run_in_thread
from app.settings.dialog import named

DATA = Qt.ItemDataRole.UserRole
STARTERS_TEXT = "Good small models to start with. Search for more."
FIT_MARKS = {"fits": "✔ fits", "tight": "⚠ tight", "does not fit": "✘ does not fit"}


def progress_text(p: DownloadProgress) -> str:
    """"120 MiB of 700 MiB · 8.5 MiB/s · 1 min 8 s left"."""
    parts = [f"{human_bytes(p.done)} of {human_bytes(p.total)}"]
    if p.rate > 0:
        parts.append(f"{human_bytes(int(p.rate))}/s")
    if p.eta_s is not None:
        eta = int(p.eta_s)
        parts.append(f"{eta // 60} min {eta % 60} s left" if eta >= 60 else f"{eta} s left")
    return " · ".join(parts)


def _tree(name: str, description: str, headers: list[str]) -> QTreeWidget:
    tree = named(QTreeWidget(), name, description)
    tree.setHeaderLabels(headers)
    tree.setRootIsDecorated(False)
    tree.setUniformRowHeights(True)
    header = tree.header()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    for column in range(1, len(headers)):
        header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
    return tree


class GetModelsDialog(QDialog):
    """Search, list a repo's files with memory estimate and fit mark, download, then "Load now"."""

    def __init__(self, parent: Optional[QWidget] = None, *, max_context: int = 4096) -> None:
        super().__init__(parent)
        self.setWindowTitle("Get models")
        self.setAccessibleName("Get models")
        self._max_context = max_context
        self._route = GuiRoute(self)
        self._download: Optional[HubDownload] = None
        self._option: Optional[ModelOption] = None
        self._paused: Optional[ModelOption] = None
        self._wanted_repo = ""
        self.downloaded_source = ""
        """Path of the finished download; set when the user chooses "Load now"."""

        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.query = named(QLineEdit(), "Search Hugging Face", "A model name, or paste a repo id or URL")
        self.query.setPlaceholderText("Search Hugging Face: a model name, or paste org/name or a URL")
        self.query.returnPressed.connect(self.search)
        self.search_button = named(QPushButton("&Search"), "Search")
        self.search_button.clicked.connect(self.search)
        row.addWidget(self.query, 1)
        row.addWidget(self.search_button)
        layout.addLayout(row)

        self.repos = _tree("Models", "Models on Hugging Face this computer can run", ["Model", "Size / formats"])
        self.repos.currentItemChanged.connect(lambda item, _old: self._repo_selected(item))
        layout.addWidget(self.repos, 2)
        self.status = named(QLabel(STARTERS_TEXT), "Status")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.files = _tree("Files", "Files or quantizations of the selected model, with memory estimate",
                           ["File", "On disk", f"Memory ({max_context:,} tokens)", "This computer"])
        self.files.currentItemChanged.connect(lambda item, _old: self._file_selected(item))
        self.files.itemDoubleClicked.connect(lambda _i, _c: self.start_download())
        layout.addWidget(self.files, 2)

        self.progress = named(QProgressBar(), "Download progress")
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        layout.addWidget(self.progress)
        self.progress_label = named(QLabel(""), "Download status")
        self.progress_label.setWordWrap(True)
        layout.addWidget(self.progress_label)

        buttons = QHBoxLayout()
        self.download_button = named(QPushButton("&Download"), "Download the selected file")
        self.download_button.clicked.connect(self.start_download)
        self.download_button.setEnabled(False)
        self.pause_button = named(QPushButton("&Pause"), "Pause the download (it resumes later)")
        self.pause_button.clicked.connect(self.pause)
        self.cancel_button = named(QPushButton("&Cancel download"), "Cancel the download and remove its files")
        self.cancel_button.clicked.connect(self.cancel)
        self.load_button = named(QPushButton("&Load now"), "Load the downloaded model")
        self.load_button.clicked.connect(self.accept)
        for b in (self.pause_button, self.cancel_button, self.load_button):
            b.setVisible(False)
        for b in (self.download_button, self.pause_button, self.cancel_button, self.load_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        buttons.addWidget(close)
        layout.addLayout(buttons)
        self.resize(720, 560)
        self._show_curated()

    # -- search ------------------------------------------------------------------------------------
    def _show_curated(self) -> None:
        for m in curated_models():
            item = QTreeWidgetItem([m["name"], human_bytes(int(m.get("size_bytes", 0)))])
            item.setToolTip(0, f"{m['repo']}\n{m.get('note', '')}")
            item.setData(0, DATA, m["repo"])
            self.repos.addTopLevelItem(item)

    def search(self) -> None:
        """Search the Hub; an empty search brings the starter list back."""
        query = self.query.text().strip()
        if not query:
            self.repos.clear()
            self.files.clear()
            self._show_curated()
            self.status.setText(STARTERS_TEXT)
            self.status.setToolTip("")
            return
        self.status.setText(f"Searching for “{query}”…")
        self.search_button.setEnabled(False)
        run_in_thread(self._route, lambda: search_models(query), self._searched)

    def _searched(self, result: object) -> None:
        self.search_button.setEnabled(True)
        self.repos.clear()
        self.files.clear()
        if isinstance(result, Exception):
            self._say_error(self.status, "Search failed", result)
            self._show_curated()  # the starter list stays usable: a failed search takes nothing away
            return
        hits: list[SearchHit] = list(result)  # type: ignore[arg-type]
        for h in hits:
            item = QTreeWidgetItem([h.repo_id, ", ".join(h.formats)])
            item.setToolTip(0, f"{h.downloads:,} downloads · {h.likes:,} likes")
            item.setData(0, DATA, h.repo_id)
            self.repos.addTopLevelItem(item)
        self.status.setText(f"{len(hits)} model{'s' if len(hits) != 1 else ''} this computer can run."
                            if hits else "Nothing found that this computer can run (GGUF or safetensors).")

    @staticmethod
    def _say_error(label, what: str, error: Exception) -> None:
        """One plain line (app.error_words); the raw error in its tooltip."""
        words = in_words(error)
        label.setText(f"{what}. {words.sentence}")
        label.setToolTip(words.details)

    # -- files -------------------------------------------------------------------------------------
    def _repo_selected(self, item: Optional[QTreeWidgetItem]) -> None:
        self.files.clear()
        self.download_button.setEnabled(False)
        if item is None:
            return
        repo = item.data(0, DATA)
        self._wanted_repo = repo
        self.status.setText(f"Listing the files of {repo}…")
        run_in_thread(self._route, lambda: repo_options(repo, max_context=self._max_context),
                      lambda result: self._listed(repo, result))

    def _listed(self, repo: str, result: object) -> None:
        if repo != self._wanted_repo:
            return  # a stale answer for a repo no longer selected
        if isinstance(result, Exception):
            self._say_error(self.status, f"Could not list {repo}", result)
            return
        options: list[ModelOption] = list(result)  # type: ignore[arg-type]
        for o in options:
            memory = human_bytes(o.weights_bytes + (o.bytes_per_session or 0))
            if o.bytes_per_session is None:  # no config.json: the conversation state is not known yet
                memory = f"≥ {memory}"
            label = f"{o.label} + images" if o.mmproj else o.label
            item = QTreeWidgetItem([label, human_bytes(o.size_bytes), memory, FIT_MARKS[o.fit]])
            item.setToolTip(3, o.reason)
            if o.mmproj:
                item.setToolTip(0, f"{o.label}, with its vision projector {o.mmproj}: the model reads images")
            item.setData(0, DATA, o)
            self.files.addTopLevelItem(item)
        self.status.setText(f"{repo}: pick a file (memory = weights + one conversation at "
                            f"{self._max_context:,} tokens; estimates).")
        best = next((i for i in range(len(options)) if options[i].fit == "fits"), 0)
        self.files.setCurrentItem(self.files.topLevelItem(best))

    def _file_selected(self, item: Optional[QTreeWidgetItem]) -> None:
        self._option = item.data(0, DATA) if item is not None else None
        self.download_button.setEnabled(self._option is not None and self._download is None)

    def select_file(self, row: int) -> None:
        self.files.setCurrentItem(self.files.topLevelItem(row))

    # -- download ----------------------------------------------------------------------------------
    def start_download(self) -> None:
        option = self._option
        if option is None or self._download is not None:
            return
        download = self._download = HubDownload(option.repo_id, list(option.files),
                                                progress=lambda p: self._route.post(self._progressed, p))
        self._paused = option
        self.progress.setValue(0)
        self.progress.setVisible(True)
        self.progress_label.setText(f"Starting {option.label}…")
        self.download_button.setEnabled(False)
        self.pause_button.setText("&Pause")
        for b in (self.pause_button, self.cancel_button):
            b.setVisible(True)
            b.setEnabled(True)
        self.load_button.setVisible(False)

        def work() -> None:
            try:
                result: object = download.run()
            except Exception as e:  # shown as the engine's named message
                result = e
            self._route.post(self._finished, download, result)

        threading.Thread(target=work, name="confab-download", daemon=True).start()

    def _progressed(self, p: DownloadProgress) -> None:
        self.progress.setValue(int(p.fraction * 1000))
        self.progress_label.setText(progress_text(p))

    def pause(self) -> None:
        """Pause, or resume a paused download (it continues from the partial file)."""
        if self._download is not None:
            self._download.pause()
            self.pause_button.setEnabled(False)
        elif self._paused is not None:
            self._option = self._paused
            self.start_download()

    def cancel(self) -> None:
        """Cancel the running download, or remove the partial file of a paused one."""
        if self._download is None and self._paused is not None:
            self._option = self._paused
            self.start_download()  # a download cancelled before its first byte cleans up and stops
        if self._download is not None:
            self._download.cancel()
            self.cancel_button.setEnabled(False)
            self.pause_button.setEnabled(False)

    def _finished(self, download: HubDownload, result: object) -> None:
        self._download = None
        self.download_button.setEnabled(self._option is not None)
        if not (isinstance(result, DownloadStopped) and not result.cancelled):
            self._paused = None
        if isinstance(result, DownloadStopped):
            if result.cancelled:
                self.progress.setVisible(False)
                self.progress_label.setText("Download cancelled; its files were removed.")
                self.pause_button.setVisible(False)
                self.cancel_button.setVisible(False)
            else:
                self.progress_label.setText("Paused. Resume continues where it stopped, even after a restart.")
                self.pause_button.setText("&Resume")
                self.pause_button.setEnabled(True)
                self.cancel_button.setEnabled(True)
            return
        self.pause_button.setVisible(False)
        self.cancel_button.setVisible(False)
        if isinstance(result, Exception):
            self._say_error(self.progress_label, "Download failed", result)
            return
        self.progress.setValue(1000)
        self.downloaded_source = str(result)
        self.progress_label.setText(f"Downloaded {download.repo_id}. It is now listed in Model ▸ Load model….")
        self.load_button.setVisible(True)
        self.load_button.setDefault(True)

    def done(self, result: int) -> None:
        if self._download is not None:
            self._download.pause()  # keep the partial file: the next download of it resumes
        self._route.close()
        super().done(result)
