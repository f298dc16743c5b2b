/// A small history that exercises every document's optional fields, escapes and nulls.
enum GoldenScenario {
    static let product = "com.example.premium.monthly"
    static let day: Int64 = 86_400_000
    static let start: Int64 = 1_700_000_000_000
    static let configuration = #"{"bindingPolicy":"keep","products":{"com.example.premium.monthly":{"type":"autoRenewable","entitlements":["premium","ads_free"]},"gems":{"type":"consumable","credits":{"gems":60}}}}"#
    static let instants: [Int64] = [start - 1, start + day, start + 40 * day, start + 75 * day]
    static let users: [(String, String)] = [("u1", "u1"), ("escaped", "u\"2\n"), ("nobody", "nobody")]

    static func transaction(_ tid: String, otid: String? = nil, user: String? = nil, month: Int64 = 0, extra: String = "") -> String {
        let purchase = start + month * 30 * day
        let userField = user.map { #""appUserId":"\#($0)","# } ?? ""
        return #"{"type":"transaction",\#(userField)"receivedAt":\#(purchase),"payload":{"transactionId":"\#(tid)","originalTransactionId":"\#(otid ?? tid)","productId":"\#(product)","purchaseDate":\#(purchase),"expiresDate":\#(purchase + 30 * day),"type":"Auto-Renewable Subscription","environment":"Production"\#(extra)}}"#
    }

    static func notificationV1(_ tid: String, otid: String, type: String) -> String {
        #"{"notification_type":"\#(type)","environment":"PROD","bid":"com.example.app","auto_renew_status":"true","auto_renew_product_id":"\#(product)","unified_receipt":{"environment":"Production","status":0,"latest_receipt_info":[{"transaction_id":"\#(tid)","original_transaction_id":"\#(otid)","product_id":"\#(product)","purchase_date_ms":"\#(start)","expires_date_ms":"\#(start + 30 * day)","web_order_line_item_id":"9\#(tid)","quantity":"1"}],"pending_renewal_info":[{"original_transaction_id":"\#(otid)","product_id":"\#(product)","auto_renew_status":"1","auto_renew_product_id":"\#(product)"}]}}"#
    }

    static let inputs: [String] = [
        transaction("1", user: "u1"),
        transaction("2", otid: "1", month: 1, extra: #","offerType":1,"offerIdentifier":"intro/1","offerDiscountType":"FREE_TRIAL","offerPeriod":"P1M","price":0,"currency":"EUR""#),
        notificationV1("11", otid: "10", type: "REFUND"),
        #"{"type":"binding","receivedAt":1700000000000,"payload":{"appUserId":"u1","originalTransactionId":"10"}}"#,
        #"{"type":"binding","receivedAt":1700000000001,"payload":{"appUserId":"u\"2\n","originalTransactionId":"1"}}"#,
        #"{"type":"transaction","appUserId":"u1","receivedAt":1700000000002,"payload":{"transactionId":"30","originalTransactionId":"30","productId":"gems","purchaseDate":1700000000000,"quantity":2,"type":"Consumable","environment":"Production"}}"#,
        transaction("2", otid: "1", month: 1, extra: #","offerType":1,"offerIdentifier":"intro/1","offerDiscountType":"FREE_TRIAL","offerPeriod":"P1M","price":0,"currency":"EUR","revocationDate":1703000000000,"revocationReason":0,"revocationType":"REFUND_FULL""#)
            + "\n{not json\n" + transaction("1", user: "u1"),
        #"{"type":"renewal","receivedAt":1705000000000,"payload":{"originalTransactionId":"1","productId":"com.example.premium.monthly","autoRenewProductId":"com.example.premium.yearly","autoRenewStatus":1,"signedDate":1705000000000,"environment":"Production","renewalPrice":9990,"currency":"EUR"}}"#,
        transaction("3", otid: "1", month: 2),
    ]
}
