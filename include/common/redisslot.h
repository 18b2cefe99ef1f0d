#ifndef SK_REDISSLOT_H
#define SK_REDISSLOT_H

#include <stddef.h>
#include <stdint.h>

/* Redis Cluster's key -> slot function: CRC16 (XMODEM) of the key, or of its hash tag,
 * modulo 16384. The tag is what lies between the first '{' and the first '}' after it,
 * when that is not empty; otherwise the whole key is hashed. Every key of one activity
 * carries the tag {activityId} (keys.h), so its keys share a slot. */

#define REDISSLOT_COUNT 16384

uint16_t redisslot_crc16(const char *buf, size_t len);
/* The part of key that is hashed: its tag, or the whole key. */
void redisslot_tag(const char *key, size_t len, const char **tag, size_t *taglen);
int redisslot_of(const char *key, size_t len);

#endif
