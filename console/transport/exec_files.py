"""Files over a plain command channel, for hosts whose sshd offers no SFTP subsystem.

The same contract as the SFTP path: a read is the file's bytes or `FileNotFoundError`; a
write lands whole or not at all (a private temp file in the target's directory, then
`mv`, which is rename(2) within one directory). Paths are `shlex.quote`d, never spliced.
"""

from __future__ import annotations

import posixpath
import secrets
import shlex

#: the exit status `read_script` uses for "no such file" (cat itself exits 1 on errors)
MISSING = 3


def read_script(path: str) -> str:
    """A `sh` script that prints the file at `path` to stdout."""
    q = shlex.quote(path)
    return f"if [ ! -e {q} ]; then exit {MISSING}; fi; exec cat -- {q}"


def write_script(path: str, mode: int) -> str:
    """A `sh` script that writes its stdin to `path` atomically, with `mode`."""
    directory, name = posixpath.split(path)
    tmp = posixpath.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
    mkdir = f"mkdir -p -- {shlex.quote(directory)}" if directory else ":"
    # The EXIT trap removes a half-written temp file when cat or chmod fails or the
    # channel closes (HUP); after the mv there is nothing left for it to remove.
    return "\n".join(
        [
            "set -e",
            f"tmp={shlex.quote(tmp)}",
            "trap 'rm -f -- \"$tmp\"' EXIT",
            "trap 'exit 1' HUP INT TERM PIPE",
            mkdir,
            # Private until chmod: nobody reads a partly written file meant to be 0600.
            '(umask 077 && cat > "$tmp")',
            f'chmod {mode & 0o7777:o} "$tmp"',
            f'mv -f -- "$tmp" {shlex.quote(path)}',
        ]
    )
