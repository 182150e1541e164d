/**
 * Secrets of SSO at rest and the SAML service provider's signing key:
 *  - SecretBox: AES-256-GCM (node:crypto) with a 96-bit random IV per value and the connection id
 *    as additional authenticated data, so a ciphertext copied onto another connection does not
 *    decrypt. Stored as `v1.<iv>.<ciphertext+tag>` (base64url). The key comes from configuration
 *    (`identity.sso.secret_key`) or is generated once into the data directory (`sso-secret-key`,
 *    mode 0600), like the JWT secret.
 *  - the SP key pair (signed AuthnRequests, the certificate in SP metadata): configured PEMs, or a
 *    self-signed RSA-2048 certificate generated once into the data directory (`sso-sp-key.pem`,
 *    `sso-sp-cert.pem`; in memory for an in-memory database) — or, on a database shared by replicas,
 *    once in that database (core/secrets.ts), so every replica signs with the same key.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { SharedSecretStore } from "../../core/secrets";

const VERSION = "v1";

function parseKey(text: string): Buffer {
  const t = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, "hex") : Buffer.from(t, "base64");
  if (key.length !== 32) throw new Error("identity.sso.secret_key must be 32 bytes (base64, or 64 hex digits)");
  return key;
}

/** The key's bytes in one spelling (base64), whatever spelling was configured: what replicas compare. */
export function canonicalSecretKey(text: string): string {
  return parseKey(text.trim()).toString("base64");
}

/** The key: configured, or generated once beside the database (with a warning). */
export function resolveSecretKey(configured: string | undefined, dataPath: string, warn: (m: string) => void): Buffer {
  if (configured) return parseKey(configured);
  if (dataPath === ":memory:") return randomBytes(32);
  const file = join(dirname(dataPath), "sso-secret-key");
  if (existsSync(file)) return parseKey(readFileSync(file, "utf8"));
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, randomBytes(32).toString("base64") + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  warn(`SVC_IDENTITY__SSO__SECRET_KEY is not set; generated one and stored it in ${file}`);
  return parseKey(readFileSync(file, "utf8"));
}

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error("AES-256-GCM needs a 32-byte key");
  }

  seal(plain: string, boundTo: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", this.key, iv);
    c.setAAD(Buffer.from(boundTo));
    const body = Buffer.concat([c.update(plain, "utf8"), c.final(), c.getAuthTag()]);
    return `${VERSION}.${iv.toString("base64url")}.${body.toString("base64url")}`;
  }

  /** throws when the value was altered, sealed for another record or with another key */
  open(sealed: string, boundTo: string): string {
    const [v, ivText, bodyText] = sealed.split(".");
    if (v !== VERSION || !ivText || !bodyText) throw new Error("not a sealed secret");
    const body = Buffer.from(bodyText, "base64url");
    const d = createDecipheriv("aes-256-gcm", this.key, Buffer.from(ivText, "base64url"));
    d.setAAD(Buffer.from(boundTo));
    d.setAuthTag(body.subarray(body.length - 16));
    return Buffer.concat([d.update(body.subarray(0, body.length - 16)), d.final()]).toString("utf8");
  }
}

export interface SpKeyPair {
  privateKey: string;
  certificate: string;
}

/** The SP signing key pair (generated on first use when not configured). */
export class SpKeys {
  private pending?: Promise<SpKeyPair>;

  constructor(
    private readonly configured: { privateKey?: string; certificate?: string },
    private readonly dataPath: string,
    private readonly warn: (m: string) => void,
    private readonly shared?: SharedSecretStore,
  ) {
    if (!!configured.privateKey !== !!configured.certificate) throw new Error("identity.sso.sp_private_key and sp_certificate are set together");
  }

  get(): Promise<SpKeyPair> {
    return (this.pending ??= this.load());
  }

  private async load(): Promise<SpKeyPair> {
    const { privateKey, certificate } = this.configured;
    if (privateKey && certificate) return { privateKey, certificate };
    if (this.shared) return JSON.parse(await this.shared.getOrCreate("saml_sp_key_pair", async () => JSON.stringify(await generateSpPair()))) as SpKeyPair;
    const mem = this.dataPath === ":memory:";
    const keyFile = join(dirname(this.dataPath), "sso-sp-key.pem");
    const certFile = join(dirname(this.dataPath), "sso-sp-cert.pem");
    if (!mem && existsSync(keyFile) && existsSync(certFile)) return { privateKey: readFileSync(keyFile, "utf8"), certificate: readFileSync(certFile, "utf8") };
    const pair = await generateSpPair();
    if (!mem) {
      mkdirSync(dirname(keyFile), { recursive: true });
      writeFileSync(keyFile, pair.privateKey, { mode: 0o600 });
      chmodSync(keyFile, 0o600);
      writeFileSync(certFile, pair.certificate);
      this.warn(`SAML service provider key not configured; generated a self-signed one into ${keyFile} and ${certFile}`);
    }
    return pair;
  }
}

/** A self-signed RSA-2048 SP certificate valid ten years. */
async function generateSpPair(): Promise<SpKeyPair> {
  const notAfterDate = new Date(Date.now() + 10 * 365 * 86_400_000);
  // selfsigned (the @peculiar/x509 and ASN.1 stack, ~20-40 ms to load) only where a key pair is generated
  const { generate } = await import("selfsigned");
  const pems = await generate([{ name: "commonName", value: "svc SAML service provider" }], { keySize: 2048, algorithm: "sha256", notAfterDate });
  return { privateKey: pems.private, certificate: pems.cert };
}
