-- :batch events per transaction (pgbench -M prepared), as a team batches them: one multi-row insert of the
-- transaction rows with their documents, then the touched subscriptions' current expiry, each upserted once (an
-- upsert cannot touch a row twice in one statement) and in one order (no deadlocks between clients). The events are
-- made from two random numbers, the same in both statements. :subscriptions and :batch are set by run.sh (the ledger's batch mode: 8 connections x 500 users,
-- batches of 100).
\set tid random(1000000000000, 9000000000000)
\set seed random(1, 1000000000)
BEGIN;
INSERT INTO transactions (transaction_id, original_transaction_id, app_user_id, product_id, purchase_date, expires_date, raw)
SELECT t.tid, t.otid, 'u' || t.otid, t.product, t.purchase, t.purchase + interval '30 days',
       jsonb_build_object('transactionId', t.tid::text, 'originalTransactionId', t.otid::text,
           'webOrderLineItemId', t.otid::text || t.period::text, 'productId', t.product,
           'subscriptionGroupIdentifier', 'g1', 'purchaseDate', extract(epoch FROM t.purchase)::bigint * 1000,
           'originalPurchaseDate', 1700000000000, 'expiresDate', extract(epoch FROM t.purchase)::bigint * 1000 + 2592000000,
           'quantity', 1, 'type', 'Auto-Renewable Subscription', 'inAppOwnershipType', 'PURCHASED',
           'signedDate', extract(epoch FROM now())::bigint * 1000, 'environment', 'Production', 'bundleId', 'com.example.app')
FROM (SELECT (:tid)::bigint * 1000 + i AS tid, 1 + ((:seed)::bigint + i * 104729) % (:subscriptions)::bigint AS otid,
             (i * 13) % 25 AS period,
             (ARRAY['com.example.premium.monthly', 'com.example.premium.yearly', 'com.example.pro.monthly'])[1 + i % 3] AS product,
             timestamptz '2023-11-14 22:13:20+00' + ((i * 13) % 25) * interval '30 days' AS purchase
      FROM generate_series(1, (:batch)::int) AS i) AS t
ON CONFLICT (transaction_id) DO NOTHING;
INSERT INTO subscriptions AS s (original_transaction_id, app_user_id, product_id, expires_date)
SELECT otid, 'u' || otid, max(product), max(purchase) + interval '30 days'
FROM (SELECT 1 + ((:seed)::bigint + i * 104729) % (:subscriptions)::bigint AS otid,
             (ARRAY['com.example.premium.monthly', 'com.example.premium.yearly', 'com.example.pro.monthly'])[1 + i % 3] AS product,
             timestamptz '2023-11-14 22:13:20+00' + ((i * 13) % 25) * interval '30 days' AS purchase
      FROM generate_series(1, (:batch)::int) AS i) AS t
GROUP BY otid ORDER BY otid  -- one lock order for every client: no deadlocks
ON CONFLICT (original_transaction_id) DO UPDATE
    SET expires_date = GREATEST(s.expires_date, EXCLUDED.expires_date), product_id = EXCLUDED.product_id, updated_at = now();
COMMIT;
