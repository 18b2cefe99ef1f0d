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
-- The hash tags of a bucketed activity's buckets ("A,A.1.s,..."; src/common/bucket.h), ''
-- for an activity of one bucket.
ALTER TABLE seckill_activity ADD COLUMN IF NOT EXISTS bucket_tags VARCHAR(800) NOT NULL DEFAULT '' AFTER status;
