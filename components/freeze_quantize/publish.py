"""Writing an output folder all at once: staged under a hidden sibling, then renamed."""

from typing import Dict

from tfkfp.components.common import uris


def publish_dir(files: Dict[str, bytes], target: str) -> str:
    """Write ``{name: content}`` into a staging sibling of target, then move it into place.

    A reader never sees half a folder: until the final rename, target holds what it held
    before (or nothing), and a failure removes the staging folder.
    """
    staging = uris.sibling_temp(target)
    try:
        uris.makedirs(staging)
        for name, content in files.items():
            with uris.open_file(uris.join(staging, name), "wb") as f:
                f.write(content)
        if uris.isdir(target):
            uris.rmtree(target)
        elif uris.exists(target):
            uris.remove(target)
        uris.rename(staging, target)
    finally:
        if uris.exists(staging):
            uris.rmtree(staging)
    return target
