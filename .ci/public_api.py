#!/usr/bin/env python3
"""Every item `cargo doc` shows for the published library crates is named in docs/API.md.

Reads rustdoc's list of all items (`target/doc/<crate>/all.html`, written by `cargo doc`), so
run it after `cargo doc`. Items re-exported from `ndarray` and the `prelude`'s re-exports are
the crate's own by reference and are skipped; an item under `__private` is hidden from the docs
and never listed. An item counts as named when its last path segment appears in backticks in
docs/API.md (alone, or starting a call or a path: `add`, `add(..)`, `io::tensor_names`)."""

import re
import sys
from pathlib import Path

CRATES = ["rune_ad", "rune_runtime"]


def items(crate: str) -> list[str]:
    page = Path("target/doc") / crate / "all.html"
    if not page.exists():
        sys.exit(f"{page} is missing: run `cargo doc` first")
    names = re.findall(r'<li><a href="[^"]+">([^<]+)</a></li>', page.read_text())
    return [n for n in names if not n.startswith(("ndarray::", "prelude::"))]


def named(api: str) -> set[str]:
    words = set()
    # Names in the code blocks (```rust ... ```) count, and so do those in inline code.
    fence = re.compile(r"```[a-z]*\n(.*?)```", re.S)
    for code in fence.findall(api) + re.findall(r"`([^`\n]+)`", fence.sub("", api)):
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
    return words


def main() -> None:
    words = named(Path("docs/API.md").read_text())
    missing = sorted(
        {f"{crate}::{item}" for crate in CRATES for item in items(crate) if item.split("::")[-1] not in words}
    )
    if missing:
        print("public items that docs/API.md does not name (name them there, or make them")
        print("crate-private or part of `__private`):")
        for m in missing:
            print(f"  {m}")
        sys.exit(1)
    total = sum(len(items(c)) for c in CRATES)
    print(f"public API: {total} items, each named in docs/API.md")


if __name__ == "__main__":
    main()
