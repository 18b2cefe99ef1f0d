#ifndef SK_MULTIPART_H
#define SK_MULTIPART_H

#include <event2/keyvalq_struct.h>
#include <stddef.h>

/* multipart/form-data bodies (RFC 7578 over RFC 2046), which the Spring service's
 * @RequestParam read as it read a query string or a form, so that any of its clients may
 * send one. Parsed strictly: the boundary from the Content-Type; every part a
 * `Content-Disposition: form-data; name="..."` without a filename (no file is a
 * parameter); CRLF line ends; the closing delimiter present. A preamble before the first
 * delimiter and an epilogue after the last are ignored, as RFC 2046 says. */

/* Parses body (len bytes; it need not end in a NUL and must hold none: httpparams refuses
 * those first) under the Content-Type header content_type into out, one pair per named
 * part in their order: the name as sent between its quotes (httpparams compares names
 * percent-decoded, as browsers percent-encode a `"` in one) and the part's content, byte
 * for byte, as the value. A part named "" is nobody's and is left out, as a form's "=x"
 * is. Returns 0, or -1 with err set. Either way out is a list the caller frees with
 * evhttp_clear_headers. */
int multipart_parse(const char *content_type, const char *body, size_t len, struct evkeyvalq *out,
                    char *err, size_t errlen);

#endif
