/** Invitation e-mail over SMTP (nodemailer), when `identity.smtp.host` is set. */
import nodemailer from "nodemailer";
import type { IdentityConfig } from "../config";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** resolves once the SMTP server accepted the message; rejects with its reason */
  send(mail: Mail): Promise<void>;
  close(): void;
}

export function smtpMailer(cfg: IdentityConfig["smtp"]): Mailer | undefined {
  if (!cfg.host) return undefined;
  const transport = nodemailer.createTransport({
    host: cfg.host,
    port: cfg.port,
    secure: cfg.secure,
    requireTLS: cfg.require_tls,
    auth: cfg.user ? { user: cfg.user, pass: cfg.password ?? "" } : undefined,
    connectionTimeout: cfg.timeout_ms,
    greetingTimeout: cfg.timeout_ms,
    socketTimeout: cfg.timeout_ms,
  });
  return {
    async send(mail) {
      await transport.sendMail({ from: cfg.from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close: () => transport.close(),
  };
}
