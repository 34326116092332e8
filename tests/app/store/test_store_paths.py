import platformdirs

from app.store import data_dir, database_path, states_dir


def test_confab_home_overrides_the_data_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("CONFAB_HOME", str(tmp_path / "portable"))
    assert data_dir() == tmp_path / "portable"
    assert database_path() == tmp_path / "portable" / "confab.db"
    assert states_dir() == tmp_path / "portable" / "states"


def test_default_is_the_platform_user_data_folder(monkeypatch):
    monkeypatch.delenv("CONFAB_HOME", raising=False)
    assert str(data_dir()) == platformdirs.user_data_dir("Confab", appauthor=False)


def test_blank_confab_home_is_ignored(monkeypatch):
    monkeypatch.setenv("CONFAB_HOME", "  ")
    assert str(data_dir()) == platformdirs.user_data_dir("Confab", appauthor=False)


def test_explicit_home_wins(tmp_path):
    assert database_path(tmp_path) == tmp_path / "confab.db"
