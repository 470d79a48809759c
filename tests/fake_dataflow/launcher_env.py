"""The environment of a launcher process that talks to the fakes only: a service account
key whose tokens come from tests/fake_dataflow/storage.py, Cloud Storage redirected there
(``STORAGE_EMULATOR_HOST``), no gcloud configuration and no metadata server probe."""

import json
import os
import pathlib
from typing import Dict

EMAIL = "launcher@tfkfp-test.iam.gserviceaccount.com"


def service_account_key(path: pathlib.Path, token_uri: str) -> pathlib.Path:
    """A service account key file with a fresh RSA key, its tokens from ``token_uri``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    path.write_text(json.dumps({
        "type": "service_account", "project_id": "tfkfp-test", "private_key_id": "1",
        "private_key": pem, "client_email": EMAIL, "client_id": "1",
        "token_uri": token_uri}))
    return path


def environment(folder: pathlib.Path, storage_url: str) -> Dict[str, str]:
    """os.environ without the caller's Google settings, pointed at the fakes."""
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GOOGLE_", "GCE_", "CLOUDSDK_", "STORAGE_EMULATOR"))}
    key = service_account_key(folder / "launcher-key.json", f"{storage_url}/token")
    env.update(GOOGLE_APPLICATION_CREDENTIALS=str(key), STORAGE_EMULATOR_HOST=storage_url,
               NO_GCE_CHECK="true", HOME=str(home), CLOUDSDK_CONFIG=str(home))
    return env
