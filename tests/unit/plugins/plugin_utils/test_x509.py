"""x509_due: a certificate is current only when it is what community.crypto would issue; real keys and certificates
made with python-cryptography in a temporary directory, and community.crypto's own output checked in the lab."""

import datetime
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.kubescale.tuning.plugins.plugin_utils import _x509 as X

NOW = datetime.datetime(2026, 12, 2, tzinfo=datetime.timezone.utc)


def key(path):
    k = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))
    return k


def cert(path, subject_key, cn, issuer_key=None, issuer_cert=None, ca=False, sans=(), days=365, ku=None, eku=None):
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    b = (x509.CertificateBuilder().subject_name(name)
         .issuer_name(issuer_cert.subject if issuer_cert else name)
         .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(NOW - datetime.timedelta(days=1)).not_valid_after(NOW + datetime.timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName(
            [x509.IPAddress(ipaddress.ip_address(s[3:])) if s.startswith("IP:") else x509.DNSName(s[4:])
             for s in sans]), critical=False)
    if ku:
        names = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
                 "key_cert_sign", "crl_sign")
        flags = dict((a, a in ku) for a in names)
        b = b.add_extension(x509.KeyUsage(encipher_only=False, decipher_only=False, **flags), critical=True)
    if eku:
        b = b.add_extension(x509.ExtendedKeyUsage(eku), critical=False)
    c = b.sign(issuer_key or subject_key, hashes.SHA256())
    path.write_bytes(c.public_bytes(serialization.Encoding.PEM))
    return c


@pytest.fixture
def pki(tmp_path):
    ca_key = key(tmp_path / "ca.key")
    ca = cert(tmp_path / "ca.crt", ca_key, "kubescale-events-etcd-ca", ca=True, ku=("key_cert_sign", "crl_sign"))
    member_key = key(tmp_path / "m.key")
    cert(tmp_path / "m.crt", member_key, "etcd-events-1", issuer_key=ca_key, issuer_cert=ca,
         sans=("IP:10.0.0.5", "DNS:etcd-events-1", "DNS:localhost", "IP:127.0.0.1"),
         ku=("digital_signature", "key_encipherment"),
         eku=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH])
    return tmp_path, ca_key, ca, member_key


def member_due(d, **over):
    args = dict(issuer_path=str(d / "ca.crt"), common_name="etcd-events-1",
                sans=["IP:10.0.0.5", "DNS:etcd-events-1", "DNS:localhost", "IP:127.0.0.1"],
                key_usage=["digitalSignature", "keyEncipherment"], extended_key_usage=["serverAuth", "clientAuth"],
                now=NOW)
    args.update(over)
    return X.due(str(d / "m.crt"), str(d / "m.key"), **args)


def test_current_certificates_are_not_due(pki):
    d = pki[0]
    assert member_due(d) == ""
    # a name given twice is one name
    assert member_due(d, sans=["IP:10.0.0.5", "DNS:etcd-events-1", "DNS:localhost", "IP:127.0.0.1",
                               "DNS:localhost"]) == ""
    assert X.due(str(d / "ca.crt"), str(d / "ca.key"), common_name="kubescale-events-etcd-ca", ca=True,
                 key_usage=["keyCertSign", "cRLSign"], now=NOW) == ""


def test_an_address_written_another_way_is_the_same_name():
    assert X._normal_san("IP:fd00:0:0::1") == "IP:fd00::1"
    assert X._normal_san("IP:10.0.0.5") == "IP:10.0.0.5"
    assert X._normal_san("DNS:etcd-events-1") == "DNS:etcd-events-1"


def test_missing_files_are_due(pki):
    d = pki[0]
    assert "cannot be read" in X.due(str(d / "absent.crt"), str(d / "m.key"), now=NOW)
    assert "cannot be read" in X.due(str(d / "m.crt"), str(d / "absent.key"), now=NOW)


def test_a_new_address_a_new_name_or_other_usages_are_due(pki):
    d = pki[0]
    assert "names DNS:etcd-events-1" in member_due(d, sans=["IP:10.0.0.6", "DNS:etcd-events-1", "DNS:localhost",
                                                            "IP:127.0.0.1"])
    assert "is for etcd-events-1, not etcd-events-9" in member_due(d, common_name="etcd-events-9")
    assert "key usages" in member_due(d, key_usage=["digitalSignature"])
    assert "extended key usages" in member_due(d, extended_key_usage=["serverAuth"])
    assert "is not a CA certificate" in member_due(d, ca=True)


def test_another_key_another_ca_or_expiry_are_due(pki):
    d, ca_key, ca, member_key = pki
    key(d / "other.key")
    assert "is not for the key" in X.due(str(d / "m.crt"), str(d / "other.key"), now=NOW)
    # the CA made again (a new key): the member's certificate no longer verifies
    new_ca_key = key(d / "ca.key")
    cert(d / "ca.crt", new_ca_key, "kubescale-events-etcd-ca", ca=True)
    assert "is not signed by" in member_due(d)
    # issued again by the new CA, for 10 days: current, then expired
    cert(d / "m.crt", member_key, "etcd-events-1", issuer_key=new_ca_key, issuer_cert=x509.load_pem_x509_certificate(
        (d / "ca.crt").read_bytes()), sans=("IP:10.0.0.5", "DNS:etcd-events-1", "DNS:localhost", "IP:127.0.0.1"),
        ku=("digital_signature", "key_encipherment"),
        eku=[ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH], days=10)
    assert member_due(d) == ""
    assert "expired on" in member_due(d, now=NOW + datetime.timedelta(days=11))


def test_a_file_that_is_no_pem_key_is_due(pki):
    d = pki[0]
    (d / "m.key").write_text("not a key\n")
    assert "is not a PEM private key" in member_due(d)


def test_a_certificate_or_issuer_that_is_no_pem_certificate_is_due(pki):
    d = pki[0]
    good = (d / "m.crt").read_bytes()
    # a run that died while the certificate was written: half of it
    (d / "m.crt").write_bytes(good[:len(good) // 2])
    assert "the certificate %s is not a PEM certificate" % (d / "m.crt") in member_due(d)
    (d / "m.crt").write_text("")
    assert "is not a PEM certificate" in member_due(d)
    (d / "m.crt").write_bytes(good)
    assert member_due(d) == ""
    (d / "ca.crt").write_text("not a certificate\n")
    assert "the issuer %s is not a PEM certificate" % (d / "ca.crt") in member_due(d)


def rsa_key(path, password=None):
    k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    enc = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    path.write_bytes(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, enc))
    return k


def test_rsa_keys_community_crypto_makes_are_read_for_their_public_half(tmp_path):
    # community.crypto's openssl_privatekey makes RSA keys by default: read without python-cryptography's check of
    # the private numbers (nothing is signed with the key here), and still compared with the certificate's
    k = rsa_key(tmp_path / "m.key")
    cert(tmp_path / "m.crt", k, "etcd-events-1", sans=("DNS:etcd-events-1",))
    assert X.due(str(tmp_path / "m.crt"), str(tmp_path / "m.key"), common_name="etcd-events-1", now=NOW) == ""
    rsa_key(tmp_path / "other.key")
    assert "is not for the key" in X.due(str(tmp_path / "m.crt"), str(tmp_path / "other.key"), now=NOW)
    # a key under a passphrase is not one the role can use: due, as before
    rsa_key(tmp_path / "locked.key", password=b"secret")
    locked = X.due(str(tmp_path / "m.crt"), str(tmp_path / "locked.key"), now=NOW)
    assert "is not a PEM private key without a password" in locked


def test_an_older_python_cryptography_reads_the_key_with_its_check(tmp_path, monkeypatch):
    # python-cryptography < 39 has no unsafe_skip_rsa_key_validation: the key is read as it always was
    k = rsa_key(tmp_path / "m.key")
    cert(tmp_path / "m.crt", k, "etcd-events-1")
    real = serialization.load_pem_private_key
    calls = []

    def old(data, password, backend=None):
        calls.append(password)
        return real(data, password)

    monkeypatch.setattr(X.serialization, "load_pem_private_key", old)
    assert X.due(str(tmp_path / "m.crt"), str(tmp_path / "m.key"), now=NOW) == ""
    assert calls == [None]
    rsa_key(tmp_path / "locked.key", password=b"secret")
    assert "without a password" in X.due(str(tmp_path / "m.crt"), str(tmp_path / "locked.key"), now=NOW)
