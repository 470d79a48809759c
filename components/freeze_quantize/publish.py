"""Writing an output folder all at once: staged under a hidden sibling, then renamed."""

from typing import Dict

from tfkfp.components.common import uris


def publish_dir(files: Dict[str, bytes], target: str) -> str:
    """Write ``{name: content}`` into a staging sibling of target, then move it into place.

    A reader never sees half a folder: until the final rename, target holds what it held
    before (or nothing), and a failure removes the staging folder.
    """
    with uris.replaced_dir(target) as staging:
        for name, content in files.items():
            with uris.open_file(uris.join(staging, name), "wb") as f:
                f.write(content)
    return target
