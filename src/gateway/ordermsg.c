#include "gateway/ordermsg.h"

#include <stdio.h>

int ordermsg_encode(struct activity_cache *activities, struct orderevent *ev, int bucket, char *buf,
                    size_t len)
{
    ev->bucket_tag[0] = '\0';
    struct keys_set scratch;
    const struct keys_set *keys = bucket > 0
                                      ? activity_bucket_keys(activities, ev->activity_id, bucket, &scratch)
                                      : NULL;
    if (keys)
        snprintf(ev->bucket_tag, sizeof(ev->bucket_tag), "%s", keys->tag);
    return orderevent_encode(ev, buf, len);
}
