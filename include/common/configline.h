#ifndef SK_CONFIGLINE_H
#define SK_CONFIGLINE_H

#include <stddef.h>

/* One line of a configuration file, the syntax config_load_stream reads:
 *   key = value      blanks around both are dropped
 *   # comment        '#' starts a comment at the start of a line or of a value, or after
 *                    a space or tab: "secret = abc#def" is abc#def
 *   key = "value"    double quotes hold a value whole (blanks at either end, " #", a
 *                    leading '#' or '"'); \" and \\ are their only escapes
 * Nothing is ever cut silently: a quote that does not close, text after it and an unknown
 * escape are errors. */

enum configline_kind { CONFIGLINE_BLANK, CONFIGLINE_PAIR, CONFIGLINE_ERROR };

/* Splits LINE (NUL-terminated, its newline included or not) in place. PAIR: *key and
 * *value point into it. ERROR: why in err, after the key when there is one. */
enum configline_kind configline_parse(char *line, char **key, char **value, char *err, size_t errlen);

#endif
