-- The read rows' table: :users app users, each with one subscription bought by one transaction (as the ledger's read
-- mode fills its ledger: one first purchase per user), run once with psql -v users=N.
TRUNCATE transactions, subscriptions;
INSERT INTO transactions (transaction_id, original_transaction_id, app_user_id, product_id, purchase_date, expires_date, raw)
SELECT 1000000000000000 + u, 1000000000000000 + u, 'u' || u, 'com.example.premium.monthly',
       timestamptz '2023-11-14 22:13:20+00', timestamptz '2023-11-14 22:13:20+00' + interval '30 days',
       jsonb_build_object('transactionId', (1000000000000000 + u)::text, 'originalTransactionId', (1000000000000000 + u)::text,
           'productId', 'com.example.premium.monthly', 'purchaseDate', 1700000000000, 'expiresDate', 1702592000000,
           'type', 'Auto-Renewable Subscription', 'environment', 'Production', 'bundleId', 'com.example.app')
FROM generate_series(1, :users) AS u;
INSERT INTO subscriptions (original_transaction_id, app_user_id, product_id, expires_date)
SELECT original_transaction_id, app_user_id, product_id, expires_date FROM transactions;
VACUUM ANALYZE transactions;
VACUUM ANALYZE subscriptions;
