"""The fuzz targets, short: ``python benchmarks/fuzz.py`` runs the long one, and
``benchmarks/fuzz_atheris.py`` the coverage-guided targets (decoder, configuration,
address)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import fuzz, fuzz_atheris
from shoe_controller.errors import ConfigError
from shoe_controller.service.config import parse_config


def test_the_decoder_counts_garbage_and_never_raises() -> None:
    report = fuzz.fuzz(300, ("decoder", "table"))
    assert report.failures == 0, report.line(300, 0)
    assert [t.tried for t in report.targets] == [300, 300]


def test_the_configuration_loader_raises_only_config_errors() -> None:
    report = fuzz.fuzz(300, ("config", "config_file"))
    assert [t.failure for t in report.targets if t.failure] == [], report.line(300, 0)
    assert [t.name for t in report.targets] == ["config", "config_file"]
    assert all(t.tried >= 1 for t in report.targets)


def test_the_address_check_raises_only_one_line_errors() -> None:
    report = fuzz.fuzz(300, ("address",))
    assert report.failures == 0, report.line(300, 0)
    assert [(t.name, t.tried) for t in report.targets] == [("address", 300)]


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "huge"])
def test_the_config_file_target_covers_every_shape(tmp_path: Path, kind: str) -> None:
    # Each shape alone, so that none is left to chance: a FIFO must not block.
    check = fuzz._config_file_target(tmp_path)
    check((kind, 7 if kind == "huge" else b""))
    check(("file", fuzz._nested(100_000, "[")))
    check(("file", b"[table]\npositions = 6\n"))


def test_a_broken_target_is_reported_with_its_example() -> None:
    def fragile(value: dict[str, object]) -> None:
        if value:
            raise KeyError("boom")

    result = fuzz._run("fragile", fuzz._configs, fragile, 100)
    assert result.failure is not None and "KeyError" in result.failure
    assert result.example is not None


@pytest.mark.parametrize("path", ["~no-such-user-here/j.sqlite3", "a\x00b"])
def test_a_journal_path_a_person_cannot_mean_is_a_config_error(path: str) -> None:
    with pytest.raises(ConfigError, match=r"journal\.path"):
        parse_config({"journal": {"path": path}})


@pytest.mark.parametrize("image", ["~no-such-user-here/x.bin", "a\x00b"])
def test_an_image_path_a_person_cannot_mean_is_a_config_error(image: str) -> None:
    entry = {"model": "M", "firmware_version": "1", "firmware_digest": "0" * 64, "image": image}
    with pytest.raises(ConfigError):
        parse_config({"approved_shoes": [entry]}, source=Path("/nonexistent/c.toml"))


def test_the_atheris_targets_run_without_atheris() -> None:
    for name, (check, corpus) in fuzz_atheris.TARGETS.items():
        for seed in corpus():
            check(seed)
        check(b"")
        check(bytes(range(256)) * 3)
        assert name in fuzz_atheris.__doc__
    fuzz_atheris.config_input(b"a = " + b"[" * 100_000 + b"]" * 100_000)
