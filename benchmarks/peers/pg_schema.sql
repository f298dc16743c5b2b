-- The usual design a team writes for App Store purchases: every transaction as a row (with the document received)
-- and a "current expiry" row per subscription (original transaction id), upserted by every event.
DROP TABLE IF EXISTS transactions;
DROP TABLE IF EXISTS subscriptions;
CREATE TABLE transactions (
    transaction_id          bigint PRIMARY KEY,
    original_transaction_id bigint      NOT NULL,
    app_user_id             text        NOT NULL,
    product_id              text        NOT NULL,
    purchase_date           timestamptz NOT NULL,
    expires_date            timestamptz,
    raw                     jsonb       NOT NULL
);
CREATE INDEX transactions_by_otid ON transactions (original_transaction_id);
CREATE TABLE subscriptions (
    original_transaction_id bigint PRIMARY KEY,
    app_user_id             text        NOT NULL,
    product_id              text        NOT NULL,
    expires_date            timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_by_user ON subscriptions (app_user_id);
