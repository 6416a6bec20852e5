"""Keep asyncssh's import from printing cryptography's DSA deprecation on every command.

asyncssh names DSA key types in its annotations, and cryptography 47+ warns each time one
is touched: five `CryptographyDeprecationWarning`s (14 lines of stderr) on an operator's
terminal before any SSH command's own output. The filter matches only that message raised
from asyncssh's modules, so every other warning (ours, asyncssh's, cryptography's) still
shows. It must be installed before asyncssh is first imported: the package's __init__
imports this module before anything that can load asyncssh.
"""

from __future__ import annotations

import warnings

# No category: importing cryptography here would load the SSH stack for local hosts too.
warnings.filterwarnings("ignore", message=r"DSA is deprecated", module=r"asyncssh(\.|$)")
