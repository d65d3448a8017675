"""Makes keys and JSON Web Tokens for the authentication tests, with PyJWT
and cryptography: an implementation independent of webgres' own.

  jwt_mint.py keys DIR        private keys in DIR, their public halves in
                              DIR/jwks.json, DIR/jwks-rotated.json, DIR/rsa.pub.pem
  jwt_mint.py tokens DIR      reads a JSON list of token specs on stdin,
                              prints one token a line
  jwt_mint.py verify SECRET   reads a token on stdin, prints its claims as
                              JSON if its HS256 signature is good

A spec is {"alg": ..., "kid": ..., "claims": {...}} signed with the key
for alg, or one of these forms of bad token:
  {"forge": "none", "claims": ...}            alg none, no signature
  {"forge": "confusion", "claims": ...}       HS256 keyed with the RSA public PEM
  {"forge": "raw", "header": "...", "payload": "...", "secret": "..."}
                                              JSON texts as given, HS256-signed
"""
import base64
import hashlib
import hmac
import json
import os
import sys

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

SECRET = "the-test-secret-of-at-least-32-bytes!"

# alg -> (key file, kid)
KEYS = {
    "RS256": ("rsa", "rsa-1"), "RS384": ("rsa", "rsa-1"), "RS512": ("rsa", "rsa-1"),
    "PS256": ("rsa", "rsa-1"), "PS384": ("rsa", "rsa-1"), "PS512": ("rsa", "rsa-1"),
    "ES256": ("ec256", "ec-1"), "ES384": ("ec384", "ec384-1"), "ES512": ("ec521", "ec521-1"),
    "EdDSA": ("ed25519", "ed-1"),
}


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def load(d, name):
    with open(os.path.join(d, name + ".pem"), "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def jwk(pub, kid, alg_cls):
    k = json.loads(alg_cls.to_jwk(pub))
    k["kid"] = kid
    k["use"] = "sig"
    return k


def make_keys(d):
    keys = {
        "rsa": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ec256": ec.generate_private_key(ec.SECP256R1()),
        "ec384": ec.generate_private_key(ec.SECP384R1()),
        "ec521": ec.generate_private_key(ec.SECP521R1()),
        "ed25519": ed25519.Ed25519PrivateKey.generate(),
        "ec256-rotated": ec.generate_private_key(ec.SECP256R1()),
    }
    for name, k in keys.items():
        with open(os.path.join(d, name + ".pem"), "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    pub = {n: k.public_key() for n, k in keys.items()}
    with open(os.path.join(d, "rsa.pub.pem"), "wb") as f:
        f.write(pub["rsa"].public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    first = [jwk(pub["rsa"], "rsa-1", RSAAlgorithm), jwk(pub["ec256"], "ec-1", ECAlgorithm),
             jwk(pub["ec384"], "ec384-1", ECAlgorithm), jwk(pub["ec521"], "ec521-1", ECAlgorithm),
             jwk(pub["ed25519"], "ed-1", OKPAlgorithm)]
    with open(os.path.join(d, "jwks.json"), "w") as f:
        json.dump({"keys": first}, f)
    # The rotation: ec-1 is retired, ec-2 takes its place.
    rotated = [k for k in first if k["kid"] != "ec-1"] + [jwk(pub["ec256-rotated"], "ec-2", ECAlgorithm)]
    with open(os.path.join(d, "jwks-rotated.json"), "w") as f:
        json.dump({"keys": rotated}, f)


def forge(d, spec):
    kind = spec["forge"]
    if kind == "none":
        return jwt.encode(spec["claims"], None, algorithm="none")
    if kind == "confusion":
        with open(os.path.join(d, "rsa.pub.pem"), "rb") as f:
            secret = f.read()
        header = json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode()
        payload = json.dumps(spec["claims"]).encode()
    else:
        secret = spec.get("secret", SECRET).encode()
        header = spec["header"].encode()
        payload = spec["payload"].encode()
    signing_input = b64(header) + "." + b64(payload)
    sig = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64(sig)


def token(d, spec):
    if "forge" in spec:
        return forge(d, spec)
    alg = spec["alg"]
    headers = dict(spec.get("headers", {}))
    if alg.startswith("HS"):
        key = spec.get("secret", SECRET)
    else:
        name, kid = KEYS[alg]
        name = spec.get("key", name)
        key = load(d, name)
        headers.setdefault("kid", spec.get("kid", kid))
    return jwt.encode(spec["claims"], key, algorithm=alg, headers=headers or None)


def main():
    cmd = sys.argv[1]
    if cmd == "keys":
        make_keys(sys.argv[2])
    elif cmd == "tokens":
        for spec in json.load(sys.stdin):
            print(token(sys.argv[2], spec))
    elif cmd == "verify":
        claims = jwt.decode(sys.stdin.read().strip(), sys.argv[2], algorithms=["HS256"],
                            options={"verify_aud": False})
        print(json.dumps(claims, sort_keys=True))


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    main()
