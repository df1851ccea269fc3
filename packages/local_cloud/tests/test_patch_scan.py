"""The source scan behind both patch registries' canary tests: every ``mock.patch.object`` on third-party
code is registered (:func:`local_cloud.patch_scan.unregistered_patches`)."""

from __future__ import annotations

from pathlib import Path

from local_cloud.patch_scan import unregistered_patches


def _write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_patch_scan_reports_an_unregistered_third_party_attribute(tmp_path: Path) -> None:
    _write(tmp_path, "hooks.py", 'mock.patch.object(BaseClient, "_make_api_call", f)\n')
    assert unregistered_patches([tmp_path], [], set()) == ["hooks.py: BaseClient._make_api_call"]


def test_patch_scan_accepts_registered_attributes_and_own_targets(tmp_path: Path) -> None:
    _write(
        tmp_path,
        "hooks.py",
        'mock.patch.object(BaseClient, "_make_api_call", f)\n'
        'stack.enter_context(mock.patch.object(\n    LocalFunction, "invoke", g))\n'
        'mock.patch.object(module.SQSBackend, "send_message", h)\n',
    )
    registered = [("botocore.client", "BaseClient._make_api_call"), ("moto.sqs.models", "SQSBackend.send_message")]
    assert unregistered_patches([tmp_path], registered, {"LocalFunction"}) == []


def test_patch_scan_reads_subpackages_and_names_each_place(tmp_path: Path) -> None:
    _write(tmp_path, "a.py", 'mock.patch.object(Pool, "_make_request", f)\n')
    _write(tmp_path, "sub/b.py", 'mock.patch.object(Backend, "put_item", f)\nmock.patch.object(Pool, "urlopen", g)\n')
    _write(tmp_path, "notes.txt", 'mock.patch.object(Pool, "ignored", f)\n')
    found = unregistered_patches([tmp_path], [("urllib3", "Pool.urlopen")], set())
    assert found == ["a.py: Pool._make_request", "sub/b.py: Backend.put_item"]
