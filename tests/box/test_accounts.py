"""The one reader of an image's group and passwd files, for the installation and the
checks alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoe_controller.box import checks, installation
from shoe_controller.box.accounts import GroupEntry, group_in_file, user_id_in_file
from shoe_controller.box.installation import InstallError

GROUP = """\
# a comment
root:x:0:
broken:x:notanumber:tech
short:x
shoe:x:995:tech,dana
plain:x:996
"""
PASSWD = """\
root:x:0:0:root:/root:/bin/bash
shoe-controller:x:994:995::/nonexistent:/usr/sbin/nologin
odd:x:uid:0::/:/bin/false
"""


@pytest.fixture
def image(tmp_path: Path) -> Path:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "group").write_text(GROUP, encoding="utf-8")
    (tmp_path / "etc" / "passwd").write_text(PASSWD, encoding="utf-8")
    return tmp_path


def test_groups_with_and_without_members(image: Path) -> None:
    group = image / "etc" / "group"
    assert group_in_file(group, "shoe") == GroupEntry("shoe", 995, ("tech", "dana"))
    assert group_in_file(group, "root") == GroupEntry("root", 0, ())
    assert group_in_file(group, "plain") == GroupEntry("plain", 996, ())


def test_entries_that_are_not_groups_are_passed_over(image: Path) -> None:
    group = image / "etc" / "group"
    for name in ("broken", "short", "# a comment", "nobody"):
        assert group_in_file(group, name) is None, name


def test_users(image: Path) -> None:
    passwd = image / "etc" / "passwd"
    assert user_id_in_file(passwd, "shoe-controller") == 994
    assert user_id_in_file(passwd, "odd") is None
    assert user_id_in_file(passwd, "nobody") is None


def test_the_installation_and_the_checks_read_the_same_groups(image: Path) -> None:
    install_gid = installation.group_file_lookup(image / "etc" / "group")
    box = checks.Box.for_root(image)
    for name in ("shoe", "plain", "root"):
        entry = box.group(name)
        assert entry is not None and install_gid(name) == entry.gid
    assert box.group("broken") is None
    with pytest.raises(InstallError, match="group broken is not in"):
        install_gid("broken")
    assert box.user_id("shoe-controller") == 994


def test_an_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "etc" / "group"
    with pytest.raises(InstallError, match=r"^cannot read .*group: No such file or directory$"):
        installation.group_file_lookup(missing)("shoe")
    # The check reports the group missing, with what to do about it.
    box = checks.Box.for_root(tmp_path)
    assert box.group("shoe") is None
    assert checks.group_membership(box).ok is False
