#ifndef SK_BUCKET_H
#define SK_BUCKET_H

#include <stddef.h>
#include <stdint.h>

/* Buckets of one activity (seckillctl activity create --buckets B): its stock split into B
 * parts, each under a hash tag of its own, so that in a Redis Cluster one hot sale is
 * served by up to B masters instead of one (docs/protocol.md, "Buckets").
 *
 *   bucket 0     tag "A"        (the keys of an unbucketed activity: B = 1 is today's layout)
 *   bucket b > 0 tag "A.b.s"    s the salt that put its slot on a master no earlier bucket
 *                               uses, chosen once at creation and recorded (MySQL column
 *                               seckill_activity.bucket_tags, field 'tags' of every bucket's
 *                               activity hash, the order event's bucketTag)
 *
 * A user always lands in the same bucket: bucket_of_user, computed the same way by the
 * gateway, by execute.lua (which refuses a request sent to another bucket) and by the
 * tests. Pure: no I/O. */

#define BUCKET_MAX 16
#define BUCKET_TAG_LEN 48
/* "A,A.1.s,A.2.s,...": the recorded form of a list. */
#define BUCKET_LIST_LEN (BUCKET_MAX * BUCKET_TAG_LEN)
/* Salts tried per bucket before giving up on a master of its own. */
#define BUCKET_SALT_TRIES 4096

struct bucket_list {
    int count;
    char tag[BUCKET_MAX][BUCKET_TAG_LEN];
};

/* The user's bucket among count: a polynomial hash of the decimal user id's digits
 * (h = (h * 31 + digit) mod 65521), mod count. Small enough to be exact in Lua's
 * doubles; sequential ids spread evenly. */
int bucket_of_user(int64_t user_id, int count);
/* The same for a decimal string (the digits only; the first non-digit ends it). */
int bucket_of_user_str(const char *user, int count);

/* The tag of bucket b with salt s ("A" for b = 0). Returns 0, or -1 when it does not fit. */
int bucket_tag(char *buf, size_t len, int64_t activity_id, int bucket, int salt);
/* True when tag is a bucket tag of activity_id: "A" or "A.b.s" with 1 <= b < BUCKET_MAX. */
int bucket_tag_valid(const char *tag, int64_t activity_id);

/* The master serving a tag's slot, as an index (any stable number per master). */
typedef int (*bucket_master_fn)(const char *tag, void *ctx);
/* Chooses count tags: bucket 0 keeps "A"; bucket b takes the smallest salt whose master no
 * earlier bucket uses, while masters are left (masters = how many there are), else salt 0.
 * Returns 0, or -1 when count is out of 1..BUCKET_MAX or master_of fails (< 0). */
int bucket_choose(int64_t activity_id, int count, int masters, bucket_master_fn master_of, void *ctx,
                  struct bucket_list *out);

/* "" (an activity created before buckets) is the one bucket "A". Returns 0, or -1 when s is
 * not a list of this activity's tags, bucket 0 first. */
int bucket_list_parse(const char *s, int64_t activity_id, struct bucket_list *out);
/* The recorded form; "" for one bucket, so an unbucketed activity's row stays as it was. */
int bucket_list_format(const struct bucket_list *list, char *buf, size_t len);
void bucket_list_single(struct bucket_list *list, int64_t activity_id);

#endif
