#include "common/redisslot.h"

#include <string.h>

/* CRC16-CCITT as Redis Cluster uses it (XMODEM: polynomial 0x1021, initial value 0, no
 * reflection), bit by bit: a key is short and the table would buy nothing measurable
 * next to a network round trip. */
uint16_t redisslot_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)((uint8_t)buf[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

void redisslot_tag(const char *key, size_t len, const char **tag, size_t *taglen)
{
    *tag = key;
    *taglen = len;
    const char *open = memchr(key, '{', len);
    if (!open)
        return;
    size_t after = (size_t)(open - key) + 1;
    const char *close = memchr(open + 1, '}', len - after);
    if (!close || close == open + 1)
        return;  /* no '}' after the '{', or "{}": the whole key is hashed */
    *tag = open + 1;
    *taglen = (size_t)(close - open - 1);
}

int redisslot_of(const char *key, size_t len)
{
    const char *tag;
    size_t taglen;
    redisslot_tag(key, len, &tag, &taglen);
    return redisslot_crc16(tag, taglen) & (REDISSLOT_COUNT - 1);
}
