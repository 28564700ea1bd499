// Error and message text for people and logs: an error's message without its stack, on one bounded line
// with secrets masked.

/** One line, no newlines, secrets masked, bounded length: fit for a Job's termination message. */
export function oneLine(text: string, secrets: (string | undefined)[] = [], max = 400): string {
  let out = text.replace(/\s+/g, ' ').trim();
  for (const s of secrets) if (s) out = out.split(s).join('***');
  return out.length > max ? `${out.slice(0, max - 3)}...` : out;
}

/** The message of an error, without a stack; OpenSSL's "C00C...:error:0A00045C:SSL routines:fn:reason:file:line" shortened to its reason. */
export function errorMessage(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  const ssl = /[0-9A-F]+:error:[0-9A-F]+:SSL routines:[^:]*:([^:]+)(?::[^:\s]*:\d+:(?:SSL alert number (\d+))?)?/.exec(text);
  if (ssl)
    return `${text.slice(0, ssl.index)}TLS handshake failed: ${ssl[1]}${ssl[2] ? ` (alert ${ssl[2]})` : ''}${text.slice(ssl.index + ssl[0].length)}`;
  return text;
}
