import LedgerCore

// MARK: - JWSVerifier+SignedFacts

/// Signed transactions and renewal infos (`JWSTransaction`, `JWSRenewalInfo`), wherever they stand: opened (and
/// verified when roots are configured) and mapped to facts. `field` names the JWS in refusals, and is the path of its
/// payload's fields in mapping refusals (`signedTransactions[2].productId`).
extension JWSVerifier {
    func transaction(
        _ jws: String, field: String, fallbackDate: UnixMillis
    ) throws(InputError) -> (fact: TransactionFact, signature: SignatureStatus) {
        let opened = try open(Array(jws.utf8), field: field, fallbackDate: fallbackDate)
        return (try V2Mapping.transaction(AppleObject(opened.payload, path: field)), opened.signature)
    }

    func renewal(
        _ jws: String, field: String, fallbackDate: UnixMillis
    ) throws(InputError) -> (fact: RenewalInfoFact, signature: SignatureStatus) {
        let opened = try open(Array(jws.utf8), field: field, fallbackDate: fallbackDate)
        return (try V2Mapping.renewal(AppleObject(opened.payload, path: field)), opened.signature)
    }
}
