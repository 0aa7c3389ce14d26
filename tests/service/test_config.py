"""The configuration file: the documented example loads, and every mistake a person can
make is one line naming the key and what is expected."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from shoe_controller.errors import ConfigError
from shoe_controller.service.config import Config, load_config

EXAMPLE = Path(__file__).parents[2] / "docs" / "config.example.toml"


def test_no_file_gives_the_defaults() -> None:
    config = load_config(None)
    assert config.device == Config().device == "auto"
    assert config.journal_path is None and len(config.approved) == 0
    assert config.table.positions == 7


def test_the_documented_example_is_valid_as_it_is() -> None:
    config = load_config(EXAMPLE)
    assert config.device == "/dev/electronic-shoe"
    assert config.journal_path == Path("/var/lib/shoe-controller/journal.sqlite3")
    assert len(config.approved) == 1
    assert dict(config.table.seat_labels)[1] == "Banker"
    assert (config.profile.name, config.profile.version) == ("pr-pai-gow-poker", 3)


def test_the_documented_example_with_its_image(tmp_path: Path) -> None:
    # With the commented image line in force, the file must exist and have the digest.
    image = b"\x00" * 16
    (tmp_path / "es7.bin").write_bytes(image)
    text = EXAMPLE.read_text()
    documented = re.search(r'firmware_digest = "([0-9a-f]{64})"', text)
    assert documented is not None
    text = text.replace(documented[1], hashlib.sha256(image).hexdigest())
    text = re.sub(r'# image = "[^"]*"', f'image = "{tmp_path / "es7.bin"}"', text)
    copy = tmp_path / "config.toml"
    copy.write_text(text)
    (entry,) = load_config(copy).approved
    assert entry.image_path == tmp_path / "es7.bin"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[tabel]\n", "unknown section or key 'tabel'"),
        ("[device]\nadress = 'auto'\n", "unknown key device.adress"),
        ("[device]\naddress = 7\n", "device.address must be a non-empty string"),
        ("device = 'auto'\n", "device must be a table"),
        ("[journal]\npath = 3\n", "journal.path must be a path string"),
        ("[output]\ncolor = 'sometimes'\n", "output.color is 'sometimes'"),
        ("[table]\npositions = 'seven'\n", "table.positions"),
        ("[table]\nunread_card_policy = 'ignore'\n", "table.unread_card_policy"),
        ("approved_shoes = 'ES-7'\n", "approved_shoes must be a list of tables"),
        ("[[approved_shoes]]\nmodel = 'ES-7'\n", "approved_shoes entry 1"),
        ("[device\n", "not valid TOML"),
    ],
)
def test_mistakes_name_the_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    message = str(exc.value)
    assert expected in message
    assert "\n" not in message
    assert str(path) in message


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(binary)
