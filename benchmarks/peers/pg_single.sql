-- One event per transaction (pgbench -M prepared): the transaction row with its document, then the subscription's
-- current expiry. :subscriptions is set by run.sh (the ledger's single mode: 32 connections x 500 users).
\set tid random(1000000000000000, 9000000000000000)
\set otid random(1, :subscriptions)
\set period random(0, 24)
\set product random(0, 2)
BEGIN;
INSERT INTO transactions (transaction_id, original_transaction_id, app_user_id, product_id, purchase_date, expires_date, raw)
SELECT t.tid, t.otid, 'u' || t.otid, t.product, t.purchase, t.purchase + interval '30 days',
       jsonb_build_object('transactionId', t.tid::text, 'originalTransactionId', t.otid::text,
           'webOrderLineItemId', t.otid::text || t.period::text, 'productId', t.product,
           'subscriptionGroupIdentifier', 'g1', 'purchaseDate', extract(epoch FROM t.purchase)::bigint * 1000,
           'originalPurchaseDate', 1700000000000, 'expiresDate', extract(epoch FROM t.purchase)::bigint * 1000 + 2592000000,
           'quantity', 1, 'type', 'Auto-Renewable Subscription', 'inAppOwnershipType', 'PURCHASED',
           'signedDate', extract(epoch FROM now())::bigint * 1000, 'environment', 'Production', 'bundleId', 'com.example.app')
FROM (SELECT (:tid)::bigint AS tid, (:otid)::bigint AS otid, (:period)::int AS period,
             (ARRAY['com.example.premium.monthly', 'com.example.premium.yearly', 'com.example.pro.monthly'])[(:product)::int + 1] AS product,
             timestamptz '2023-11-14 22:13:20+00' + (:period)::int * interval '30 days' AS purchase) AS t
ON CONFLICT (transaction_id) DO NOTHING;
INSERT INTO subscriptions AS s (original_transaction_id, app_user_id, product_id, expires_date)
VALUES ((:otid)::bigint, 'u' || (:otid)::bigint,
        (ARRAY['com.example.premium.monthly', 'com.example.premium.yearly', 'com.example.pro.monthly'])[(:product)::int + 1],
        timestamptz '2023-11-14 22:13:20+00' + ((:period)::int + 1) * interval '30 days')
ON CONFLICT (original_transaction_id) DO UPDATE
    SET expires_date = GREATEST(s.expires_date, EXCLUDED.expires_date), product_id = EXCLUDED.product_id, updated_at = now();
COMMIT;
