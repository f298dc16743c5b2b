import LedgerCore

/// Seed 000 (sandbox field notes, 2020-11-13 and 16), the "restore storm": six monthly periods (five minutes each in
/// the sandbox), restored again and again with new transaction ids and the original dates, then a resubscription to
/// the 3-month product (fifteen minutes) under the same OTID, itself restored. Told once here for every suite that
/// needs it (the fold's tests, the timeline picture's).
public enum RestoreStorm {
    public static let monthly = "com.fvcorp.group.auto.m1.AJSPremium"
    public static let quarterly = "com.fvcorp.group.auto.m03.AJSPremium"
    public static let five = 5 * Scenario.minute

    /// The six monthly periods: (transaction id, purchase instant).
    public static let monthlyPeriods: [(String, UnixMillis)] = [
        ("1000000741475761", Scenario.utc(2020, 11, 13, 4, 44, 30)),
        ("1000000741477213", Scenario.utc(2020, 11, 13, 4, 49, 30)),
        ("1000000741479050", Scenario.utc(2020, 11, 13, 4, 54, 30)),
        ("1000000741479862", Scenario.utc(2020, 11, 13, 4, 59, 30)),
        ("1000000741480950", Scenario.utc(2020, 11, 13, 5, 4, 30)),
        ("1000000741482209", Scenario.utc(2020, 11, 13, 5, 9, 30)),
    ]

    /// Restore rounds: when the copies were observed (UTC) and (new id, purchase time of the period it copies).
    public static let restoreRounds: [(UnixMillis, [(String, String)])] = [
        (Scenario.utc(2020, 11, 13, 5, 36, 10), [("1000000741490609", "04:59:30")]),
        (Scenario.utc(2020, 11, 13, 5, 42, 38), [("1000000741492121", "04:59:30")]),
        (Scenario.utc(2020, 11, 13, 5, 48, 30), [("1000000741494008", "04:59:30")]),
        (
            Scenario.utc(2020, 11, 13, 6, 18, 52),
            [
                ("1000000741504973", "04:44:30"), ("1000000741504974", "05:04:30"), ("1000000741504975", "04:54:30"),
                ("1000000741504976", "05:09:30"), ("1000000741504977", "04:59:30"), ("1000000741504978", "04:49:30"),
            ]
        ),
        (
            Scenario.utc(2020, 11, 13, 6, 27, 44),
            [
                ("1000000741509639", "04:59:30"), ("1000000741509640", "05:09:30"), ("1000000741509641", "04:49:30"),
                ("1000000741509642", "04:54:30"), ("1000000741509643", "05:04:30"), ("1000000741509644", "04:44:30"),
            ]
        ),
        (
            Scenario.utc(2020, 11, 16, 2, 58, 46),
            [
                ("1000000742182768", "04:44:30"), ("1000000742182769", "04:49:30"), ("1000000742182770", "04:54:30"),
                ("1000000742182771", "05:04:30"), ("1000000742182772", "05:09:30"), ("1000000742182773", "04:59:30"),
            ]
        ),
    ]

    public static let quarterlyPeriods: [(String, UnixMillis)] = [
        ("1000000742186784", Scenario.utc(2020, 11, 16, 3, 17, 45)),
        ("1000000742190839", Scenario.utc(2020, 11, 16, 3, 32, 45)),
        ("1000000742195906", Scenario.utc(2020, 11, 16, 3, 47, 45)),
        ("1000000742199168", Scenario.utc(2020, 11, 16, 4, 2, 45)),
        ("1000000742202217", Scenario.utc(2020, 11, 16, 4, 17, 45)),
        ("1000000742204168", Scenario.utc(2020, 11, 16, 4, 32, 45)),
    ]

    public static func time(_ hhmmss: String) -> UnixMillis {
        let parts = hhmmss.split(separator: ":").map { Int64($0)! }
        return Scenario.utc(2020, 11, 13, parts[0], parts[1], parts[2])
    }

    /// The whole story as V1 receipt facts (restores carry the period's web order line item id and dates).
    public static func story() -> Scenario {
        var s = Scenario(otid: "1000000741475761", environment: .sandbox)
        for (id, start) in monthlyPeriods {
            s.v1Transaction(
                id, product: monthly, purchased: start, expires: start + five, observed: start + 1000,
                webOrderLineItemId: "woli-\(start)")
        }
        for (observed, copies) in restoreRounds {
            for (id, when) in copies {
                let start = time(when)
                s.v1Transaction(
                    id, product: monthly, purchased: start, expires: start + five, observed: observed,
                    webOrderLineItemId: "woli-\(start)")
            }
        }
        for (id, start) in quarterlyPeriods {
            s.v1Transaction(
                id, product: quarterly, purchased: start, expires: start + 3 * five, observed: start + 1000,
                webOrderLineItemId: "woli-\(start)")
        }
        // The 3-month restore of 2020-11-16 14:11 (+8): copies of two quarterly periods and two monthly ones.
        let observed = Scenario.utc(2020, 11, 16, 6, 11, 40)
        for (id, start, product) in [
            ("1000000742227889", quarterlyPeriods[1].1, quarterly), ("1000000742227890", quarterlyPeriods[0].1, quarterly),
            ("1000000742227887", monthlyPeriods[0].1, monthly), ("1000000742227893", monthlyPeriods[3].1, monthly),
        ] {
            s.v1Transaction(
                id, product: product, purchased: start,
                expires: start + (product == quarterly ? 3 * five : five), observed: observed,
                webOrderLineItemId: "woli-\(start)")
        }
        return s
    }
}
