-- Seckill schema. Idempotent: applied at every `make up`.
-- Money is DECIMAL(15,2) yuan here and integer cents in C. Times are UTC.

CREATE TABLE IF NOT EXISTS coupon (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name            VARCHAR(128)    NOT NULL,
    type            ENUM('CASH', 'DISCOUNT', 'GIFT') NOT NULL,
    amount          DECIMAL(15,2)   NOT NULL DEFAULT 0,      -- CASH: money off
    rate            DECIMAL(5,4)    NOT NULL DEFAULT 1,      -- DISCOUNT: share paid, (0,1]
    min_order       DECIMAL(15,2)   NOT NULL DEFAULT 0,
    max_discount    DECIMAL(15,2)   NOT NULL DEFAULT 0,      -- DISCOUNT cap, 0 = none
    total_count     INT UNSIGNED    NOT NULL,
    issued_count    INT UNSIGNED    NOT NULL DEFAULT 0,
    used_count      INT UNSIGNED    NOT NULL DEFAULT 0,
    start_time      DATETIME(3)     NOT NULL,
    end_time        DATETIME(3)     NOT NULL,
    status          ENUM('ACTIVE', 'INACTIVE', 'EXPIRED') NOT NULL DEFAULT 'ACTIVE',
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    CONSTRAINT coupon_issued_within_total CHECK (issued_count <= total_count),
    CONSTRAINT coupon_window CHECK (end_time > start_time)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS seckill_activity (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name            VARCHAR(128)    NOT NULL,
    coupon_id       BIGINT UNSIGNED NOT NULL,
    stock           INT UNSIGNED    NOT NULL,                -- initial stock of the sale
    sold_count      INT UNSIGNED    NOT NULL DEFAULT 0,      -- SUCCESS orders persisted
    start_time      DATETIME(3)     NOT NULL,
    end_time        DATETIME(3)     NOT NULL,
    status          ENUM('PENDING', 'ACTIVE', 'ENDED', 'CANCELLED') NOT NULL DEFAULT 'PENDING',
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    KEY idx_activity_coupon (coupon_id),
    CONSTRAINT activity_sold_within_stock CHECK (sold_count <= stock),
    CONSTRAINT activity_window CHECK (end_time > start_time)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- I5: a redelivered or replayed order can never add a second row.
CREATE TABLE IF NOT EXISTS seckill_order (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    order_no        VARCHAR(48)     NOT NULL,
    user_id         BIGINT UNSIGNED NOT NULL,
    activity_id     BIGINT UNSIGNED NOT NULL,
    coupon_id       BIGINT UNSIGNED NOT NULL,
    status          ENUM('SUCCESS') NOT NULL DEFAULT 'SUCCESS',
    accepted_at     DATETIME(3)     NOT NULL,                -- when the gateway reserved it
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_order_no (order_no),
    UNIQUE KEY uk_user_activity (user_id, activity_id),
    KEY idx_order_activity (activity_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE IF NOT EXISTS user_coupon (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    user_id         BIGINT UNSIGNED NOT NULL,
    coupon_id       BIGINT UNSIGNED NOT NULL,
    source_ref      VARCHAR(64)     NOT NULL,                -- order number, or grant reference
    status          ENUM('UNUSED', 'USED', 'EXPIRED') NOT NULL DEFAULT 'UNUSED',
    order_ref       VARCHAR(64)     NULL,                    -- checkout order it was used on
    discount        DECIMAL(15,2)   NULL,
    payable         DECIMAL(15,2)   NULL,                    -- what the checkout order paid
    used_at         DATETIME(3)     NULL,
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    updated_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_source_ref (source_ref),
    KEY idx_user_coupon_user (user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Columns added after the first release (MariaDB's IF NOT EXISTS keeps this idempotent).
ALTER TABLE user_coupon ADD COLUMN IF NOT EXISTS payable DECIMAL(15,2) NULL AFTER discount;
-- The consumer's lifecycle pass finds a coupon's unused user coupons by this index.
ALTER TABLE user_coupon ADD INDEX IF NOT EXISTS idx_user_coupon_coupon (coupon_id, status);

-- Orders that ended FAILED, with why and when: recorded by the consumers from each
-- activity's failed stream in Redis (src/consumer/outcomes.c), so that every outcome of
-- an order is in MySQL. A FAILED order never has a seckill_order row (confirm and release
-- cannot both win), and a user may have several here and still one SUCCESS there.
--   ROLLED_BACK  its delivery to Kafka failed: the gateway returned the stock
--   EXPIRED      it never reached Kafka within seckill.pre-reduce-timeout: the reaper did
--   REJECTED     Kafka held it but Redis had lost it and could no longer honour it
--   REFUSED      MySQL refused its row for good (dead-lettered with the reason)
--   SUPERSEDED   another order of the user or the sale's last unit holds its place after
--                a Redis failover
CREATE TABLE IF NOT EXISTS seckill_order_failed (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    order_no        VARCHAR(48)     NOT NULL,
    user_id         BIGINT UNSIGNED NOT NULL,
    activity_id     BIGINT UNSIGNED NOT NULL,
    reason          VARCHAR(16)     NOT NULL,
    accepted_at     DATETIME(3)     NOT NULL,                -- from the order number
    failed_at       DATETIME(3)     NOT NULL,                -- when Redis decided it
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id),
    UNIQUE KEY uk_failed_order_no (order_no),
    KEY idx_failed_activity (activity_id),
    KEY idx_failed_user (user_id, activity_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS
    updated_at DATETIME(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3) AFTER created_at;
-- The hash tags of a bucketed activity's buckets ("A,A.1.s,..."; src/common/bucket.h), ''
-- for an activity of one bucket.
ALTER TABLE seckill_activity ADD COLUMN IF NOT EXISTS bucket_tags VARCHAR(800) NOT NULL DEFAULT '' AFTER status;
-- When the sale's Redis side was archived (seckillctl activity archive, the consumer's
-- lifecycle pass: src/store/archive.c): its orders are final and all here, and Redis keeps
-- only its activity hash. NULL while it lives in Redis. The index serves the lifecycle
-- pass's look for sales to archive, which so reads only the ones not archived yet.
ALTER TABLE seckill_activity ADD COLUMN IF NOT EXISTS archived_at DATETIME(3) NULL AFTER bucket_tags;
ALTER TABLE seckill_activity ADD INDEX IF NOT EXISTS idx_activity_archive (archived_at, end_time);
-- When the coupon's user coupons left Redis (seckillctl coupon archive, the consumer's
-- lifecycle pass: src/store/couponarchive.c). NULL while Redis holds them. The index
-- serves every consumer's look for the next coupon due, once a lifecycle pass.
ALTER TABLE coupon ADD COLUMN IF NOT EXISTS archived_at DATETIME(3) NULL AFTER status;
ALTER TABLE coupon ADD INDEX IF NOT EXISTS idx_coupon_archive (archived_at, end_time);

-- Manual bans (seckillctl ban, POST /admin/bans): a user, or an address range (CIDR,
-- IPv4 or IPv6, no bit set past the prefix), kept out of one sale (activity_id) or of
-- every sale (NULL) from starts_at until ends_at, unless removed before. This is the
-- record, with who set each and why, and who removed it; Redis's hash seckill:bans
-- carries the bans in force to the gateways (src/ctl/ctlban.c, docs/protection.md).
-- created_by is the OS user of seckillctl ("alice@ops1") or the admin API's caller.
CREATE TABLE IF NOT EXISTS seckill_ban (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    kind            ENUM('USER', 'IP') NOT NULL,
    user_id         BIGINT UNSIGNED NULL,                    -- USER
    cidr            VARCHAR(49)     NULL,                    -- IP: "203.0.113.0/24"
    activity_id     BIGINT UNSIGNED NULL,                    -- NULL: every sale
    starts_at       DATETIME(3)     NOT NULL,
    ends_at         DATETIME(3)     NOT NULL,
    reason          VARCHAR(128)    NOT NULL DEFAULT '',
    created_by      VARCHAR(128)    NOT NULL,
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    removed_at      DATETIME(3)     NULL,
    removed_by      VARCHAR(128)    NULL,
    PRIMARY KEY (id),
    KEY idx_ban_in_force (removed_at, ends_at),
    KEY idx_ban_activity (activity_id),
    CONSTRAINT ban_window CHECK (ends_at > starts_at),
    CONSTRAINT ban_subject CHECK ((kind = 'USER' AND user_id IS NOT NULL AND cidr IS NULL) OR
                                  (kind = 'IP' AND cidr IS NOT NULL AND user_id IS NULL))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Every administrative write, from seckillctl or the admin API, whatever came of it
-- (src/ctl/ctlaudit.c): when, which command, its arguments (a JSON array), who from where
-- (the OS user and host of seckillctl, or the admin API's caller and address) and its exit
-- status (0 done, 1 failed or refused, 2 bad command line). Reads are not recorded.
CREATE TABLE IF NOT EXISTS admin_audit (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    at              DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    command         VARCHAR(32)     NOT NULL,
    args            TEXT            NOT NULL,
    origin          VARCHAR(128)    NOT NULL,
    exit_status     TINYINT UNSIGNED NOT NULL,
    PRIMARY KEY (id),
    KEY idx_audit_at (at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Refunds and revocations (docs/coupons.md#refunds-and-revocations). A refund takes a user
-- coupon USED -> UNUSED and keeps its order reference and time as the last refund; a shop's
-- revocation takes an UNUSED or EXPIRED one to REVOKED (seckillctl coupon revoke), with
-- when and why. event_seq is the number of the last coupon.used / coupon.refunded event
-- applied (src/common/redeemevent.h): a replayed event with no higher number changes nothing.
ALTER TABLE user_coupon MODIFY COLUMN status ENUM('UNUSED', 'USED', 'EXPIRED', 'REVOKED') NOT NULL DEFAULT 'UNUSED';
ALTER TABLE user_coupon ADD COLUMN IF NOT EXISTS refunded_ref VARCHAR(64) NULL AFTER used_at;
ALTER TABLE user_coupon ADD COLUMN IF NOT EXISTS refunded_at DATETIME(3) NULL AFTER refunded_ref;
ALTER TABLE user_coupon ADD COLUMN IF NOT EXISTS event_seq BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER refunded_at;
ALTER TABLE user_coupon ADD COLUMN IF NOT EXISTS revoked_at DATETIME(3) NULL AFTER event_seq;
ALTER TABLE user_coupon ADD COLUMN IF NOT EXISTS revoke_reason VARCHAR(128) NULL AFTER revoked_at;

-- A SUCCESS order cancelled by the shop (seckillctl order cancel, docs/administration.md):
-- its row stays, CANCELLED, with when and why; it no longer counts in sold_count, and its
-- user coupon is REVOKED. The row keeps its place under UNIQUE(user_id, activity_id,
-- user_slot): a cancelled order still counts against its user's limit.
ALTER TABLE seckill_order MODIFY COLUMN status ENUM('SUCCESS', 'CANCELLED') NOT NULL DEFAULT 'SUCCESS';
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS cancelled_at DATETIME(3) NULL AFTER updated_at;
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS cancel_reason VARCHAR(128) NULL AFTER cancelled_at;

-- Outcome events waiting to be published (src/consumer/outbox.c, docs/events.md): the
-- transaction that writes outcomes (orders' rows, failed orders', coupons' uses) writes
-- their events as one row here, a line "<userId>\t<event JSON>" each, and the outcome
-- relay (src/consumer/relay.c) publishes the rows' events to kafka.outcome-topic in id
-- order and deletes a row once Kafka has all of its events. Empty but for the last
-- moments' events while Kafka takes them.
CREATE TABLE IF NOT EXISTS outcome_outbox (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    event_count     INT UNSIGNED    NOT NULL,
    events          MEDIUMTEXT      NOT NULL,
    created_at      DATETIME(3)     NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- A limit per user above one (seckillctl activity create --per-user N): a user may hold up
-- to per_user orders of the sale, each in a slot 1..per_user that the execute script
-- chose (include/common/holder.h). MySQL holds each slot once, so a sale can never
-- persist more than per_user orders of a user, whatever Redis lost.
ALTER TABLE seckill_activity ADD COLUMN IF NOT EXISTS per_user SMALLINT UNSIGNED NOT NULL DEFAULT 1 AFTER stock;
ALTER TABLE seckill_activity ADD CONSTRAINT IF NOT EXISTS activity_per_user CHECK (per_user BETWEEN 1 AND 100);
ALTER TABLE seckill_order ADD COLUMN IF NOT EXISTS user_slot SMALLINT UNSIGNED NOT NULL DEFAULT 1 AFTER activity_id;
ALTER TABLE seckill_order ADD UNIQUE KEY IF NOT EXISTS uk_user_activity_slot (user_id, activity_id, user_slot);
ALTER TABLE seckill_order DROP INDEX IF EXISTS uk_user_activity;
