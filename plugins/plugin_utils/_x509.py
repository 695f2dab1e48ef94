# -*- coding: utf-8 -*-
# Copyright: (c) 2026, kubescale.tuning contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether a certificate the controller keeps is still the one a role would issue (the x509_due filter).

On the controller, in the Ansible process itself, with python-cryptography (ansible-core's own dependency): a role
that issues certificates with community.crypto (a module run on the controller per certificate, per host, per run)
asks this first and runs those tasks only when a certificate is missing or no longer what it would issue. Issuing
stays community.crypto's job.
"""

from __future__ import annotations

import datetime
import ipaddress

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    HAS_CRYPTOGRAPHY = True
except ImportError:  # pragma: no cover - ansible-core itself requires it; ansible-test's import sanity has none
    HAS_CRYPTOGRAPHY = False

# community.crypto's names (its key_usage / extended_key_usage options) and python-cryptography's.
KEY_USAGES = {"digitalSignature": "digital_signature", "contentCommitment": "content_commitment",
              "keyEncipherment": "key_encipherment", "dataEncipherment": "data_encipherment",
              "keyAgreement": "key_agreement", "keyCertSign": "key_cert_sign", "cRLSign": "crl_sign"}
EXTENDED_KEY_USAGES = {"serverAuth": "SERVER_AUTH", "clientAuth": "CLIENT_AUTH", "codeSigning": "CODE_SIGNING",
                       "emailProtection": "EMAIL_PROTECTION"}


def _read(path, what):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise _Due("%s %s cannot be read (%s)" % (what, path, exc.strerror)) from None


class _Due(Exception):
    """Why the certificate is to be issued again."""


def _load_cert(path, what):
    """The PEM certificate at path; a file that is not one (truncated by a dead run, overwritten) is due, not an
    error: issuing it again is what the role is for."""
    try:
        return x509.load_pem_x509_certificate(_read(path, what))
    except ValueError as exc:
        raise _Due("%s %s is not a PEM certificate (%s)" % (what, path, exc)) from None


def _extension(cert, kind):
    try:
        return cert.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None


def _sans(cert):
    ext = _extension(cert, x509.SubjectAlternativeName)
    if ext is None:
        return set()
    names = set("DNS:%s" % n for n in ext.get_values_for_type(x509.DNSName))
    names |= set("IP:%s" % n for n in ext.get_values_for_type(x509.IPAddress))
    return names


def _load_key(data):
    """The PEM private key in data, read for its public half only.

    python-cryptography checks an RSA key's private numbers when it loads one (OpenSSL's RSA_check_key): 0.2 s of
    controller CPU for a 4096-bit key, the most expensive step of an Events member's idempotent run, asked for every
    member in every run. Nothing is signed with the key here - its public half is compared with the certificate's -
    so that check is skipped (python-cryptography >= 39; an older one checks). A key whose private numbers alone
    were damaged is not found here: etcd cannot sign its TLS handshakes with it, and the role's health wait fails."""
    try:
        return serialization.load_pem_private_key(data, password=None, unsafe_skip_rsa_key_validation=True)
    except TypeError as exc:
        if "unsafe_skip_rsa_key_validation" not in str(exc):
            raise
        return serialization.load_pem_private_key(data, password=None)


def due(cert_path, key_path, issuer_path=None, common_name=None, sans=None, key_usage=None,
        extended_key_usage=None, ca=False, now=None):
    """'' when the PEM certificate at cert_path is current, else why it is due: missing, unreadable or not PEM (it or
    its issuer's); not for the private key at key_path; not signed by the certificate at issuer_path (self-signed
    when None); expired; or its common name, subject alternative names (C(DNS:x), C(IP:x)), key usages, extended key
    usages or CA flag are not the wanted ones (each compared only when given). Raises RuntimeError without
    python-cryptography."""
    if not HAS_CRYPTOGRAPHY:
        raise RuntimeError("x509_due needs python-cryptography on the controller (community.crypto needs it too)")
    try:
        cert = _load_cert(cert_path, "the certificate")
        try:
            key = _load_key(_read(key_path, "the key"))
        except (ValueError, TypeError) as exc:
            raise _Due("the key %s is not a PEM private key without a password (%s)" % (key_path, exc)) from None
        pub = serialization.PublicFormat.SubjectPublicKeyInfo
        if key.public_key().public_bytes(serialization.Encoding.PEM, pub) != \
                cert.public_key().public_bytes(serialization.Encoding.PEM, pub):
            raise _Due("%s is not for the key %s" % (cert_path, key_path))
        issuer = cert if issuer_path is None else _load_cert(issuer_path, "the issuer")
        try:
            cert.verify_directly_issued_by(issuer)
        except Exception as exc:  # ValueError, TypeError, and InvalidSignature, which is neither
            raise _Due("%s is not signed by %s (%s)" % (cert_path, issuer_path or "its own key", exc.__class__.__name__)) \
                from None
        when = now or datetime.datetime.now(datetime.timezone.utc)
        if cert.not_valid_after_utc <= when:
            raise _Due("%s expired on %s" % (cert_path, cert.not_valid_after_utc.date()))
        if common_name is not None:
            names = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
            if names != [common_name]:
                raise _Due("%s is for %s, not %s" % (cert_path, ", ".join(names) or "no common name", common_name))
        if sans is not None and _sans(cert) != set(_normal_san(s) for s in sans):
            raise _Due("%s names %s, not %s" % (cert_path, ", ".join(sorted(_sans(cert))) or "nothing",
                                                ", ".join(sorted(set(sans)))))
        if key_usage is not None:
            ext = _extension(cert, x509.KeyUsage)
            have = set(k for k, attr in KEY_USAGES.items() if ext is not None and _key_usage(ext, attr))
            if have != set(key_usage):
                raise _Due("%s has key usages %s, not %s" % (cert_path, ", ".join(sorted(have)) or "none",
                                                             ", ".join(sorted(key_usage))))
        if extended_key_usage is not None:
            ext = _extension(cert, x509.ExtendedKeyUsage)
            have = set(k for k, attr in EXTENDED_KEY_USAGES.items()
                       if ext is not None and getattr(ExtendedKeyUsageOID, attr) in ext)
            if have != set(extended_key_usage):
                raise _Due("%s has extended key usages %s, not %s" % (
                    cert_path, ", ".join(sorted(have)) or "none", ", ".join(sorted(extended_key_usage))))
        constraints = _extension(cert, x509.BasicConstraints)
        if bool(constraints is not None and constraints.ca) != bool(ca):
            raise _Due("%s is %sa CA certificate" % (cert_path, "not " if ca else ""))
    except _Due as reason:
        return str(reason)
    return ""


def _normal_san(name):
    """An IP address as python-cryptography writes it (fd00:0::1 is fd00::1); other names as given."""
    if name.startswith("IP:"):
        try:
            return "IP:%s" % ipaddress.ip_address(name[3:])
        except ValueError:
            return name
    return name


def _key_usage(ext, attr):
    """A KeyUsage flag; encipher_only and decipher_only raise unless key_agreement, the others never."""
    try:
        return bool(getattr(ext, attr))
    except ValueError:
        return False
