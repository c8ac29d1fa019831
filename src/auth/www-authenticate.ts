/** The challenge of every 401: Basic auth, UTF-8 credentials (RFC 7617). */
export const WWW_AUTHENTICATE = 'Basic realm="lending-api", charset="UTF-8"';
