"""Bad configuration is refused at start with a message naming key and value."""
import subprocess

import pytest

from conftest import BIN

CASES = [
    ('[ec]\nstripe_unit = "64KB"\n', ["ec.stripe_unit", "64KB"]),
    ('[ec]\nstripe_unit = 0\n', ["ec.stripe_unit"]),
    ('[fragment_cache]\ncapacity = -5\n', ["fragment_cache.capacity"]),
    ('[ec]\nstripe = "64KiB"\n', ["ec.stripe"]),
    ('[layout]\nk = 4\nm = 3\n[[dss]]\naddress = "127.0.0.1:1"\n[[dss]]\naddress = "127.0.0.1:2"\n',
     ["k+m", "7"]),
    ('[mds]\naddress = "nowhere"\n', ["mds.address", "nowhere"]),
]


@pytest.mark.parametrize("daemon", ["rustfs-mds", "rustfs-fuse"])
@pytest.mark.parametrize("text,words", CASES)
def test_bad_config_is_refused_naming_key(tmp_path, daemon, text, words):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    args = [f"{BIN}/{daemon}", "--config", str(cfg)]
    if daemon == "rustfs-fuse":
        args += ["--mount", str(tmp_path / "mnt")]
    r = subprocess.run(args, capture_output=True, text=True, timeout=20)
    assert r.returncode == 2, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr


def test_missing_config_file_is_named(tmp_path):
    r = subprocess.run([f"{BIN}/rustfs-dss", "--config", str(tmp_path / "none.toml"), "--id", "0"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2
    assert "none.toml" in r.stderr
