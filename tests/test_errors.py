"""One root for the package's errors, and the CLI's one line for any of them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from click.testing import CliRunner

import fingerprint_indexer
from fingerprint_indexer.cli.main import LazyGroup
from fingerprint_indexer.errors import FingerprintIndexerError, one_line
from fingerprint_indexer.store.errors import StoreDamagedError


def test_every_error_class_of_the_package_derives_from_the_root() -> None:
    found = {}
    for info in pkgutil.walk_packages(fingerprint_indexer.__path__, "fingerprint_indexer."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == info.name:
                found[f"{info.name}.{name}"] = obj
    assert len(found) > 20  # stores, readers, Elasticsearch, spool, service, ...
    strays = sorted(name for name, cls in found.items() if not issubclass(cls, FingerprintIndexerError))
    assert strays == []


def test_the_cli_prints_any_package_error_as_one_line() -> None:
    group = LazyGroup("fingerprint-indexer")

    @group.command()
    def damaged() -> None:
        raise StoreDamagedError("store out/store is damaged\nsee 'fingerprint-indexer store check out/store'")

    @group.command()
    def other() -> None:
        raise KeyError("not ours")

    res = CliRunner().invoke(group, ["damaged"])
    assert res.exit_code == 1
    assert res.output == ("error: store out/store is damaged; see 'fingerprint-indexer store check "
                          "out/store'\n")  # fmt: skip
    assert isinstance(CliRunner().invoke(group, ["other"]).exception, KeyError)  # a bug stays a traceback


def test_one_line_folds_line_breaks() -> None:
    assert one_line(ValueError("a\n\n  b \n")) == "a; b"
    assert one_line(ValueError("")) == "ValueError"
