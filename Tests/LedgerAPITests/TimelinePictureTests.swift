import Foundation
import LedgerAPI
import LedgerCore
import LedgerTestSupport
import Testing

/// The timeline picture (`TimelinePicture`): deterministic bytes, every string escaped, one bar per period; and, in a
/// real headless Chromium (the distribution's `chromium`), the SVG and the page load with no console error and show
/// the expected number of period bars. Screenshots of the two stories go to `STORELEDGER_SCREENSHOT_DIR` when set
/// (`tools/screenshots.sh` writes the ones under docs/pictures/).
@Suite(.blocking) struct TimelinePictureTests {
    static let monthly = "com.example.premium.monthly"
    static let yearly = "com.example.premium.yearly"
    static let month = 30 * Scenario.day
    static let t0 = Scenario.utc(2024, 1, 10, 9)

    /// The seeds' restore storm, claimed by its sandbox user, at the resubscription.
    static func restoreStorm() -> TimelineView {
        var s = RestoreStorm.story()
        s.claim("sandbox-user-7", at: Scenario.utc(2020, 11, 13, 4, 45))
        return s.timeline().view(at: Scenario.utc(2020, 11, 16, 3, 40), asOf: nil)
    }

    /// A refund and a transfer: a free trial, monthly renewals, the third month refunded, the subscription moved from
    /// alice to bob by a restore on bob's account, a failed renewal with a grace period that recovers, then an
    /// upgrade to the yearly plan.
    static func refundAndTransfer() -> (view: TimelineView, periods: Int) {
        let rules = FoldRules(
            catalog: Catalog(products: [
                monthly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g", level: 1),
                yearly: ProductConfiguration(type: .autoRenewable, entitlements: ["premium"], group: "g", level: 2),
            ]))
        var s = Scenario(otid: "2000000123456789", rules: rules)
        var start = t0
        var periods: [TransactionFact] = []
        for i in 0..<6 {
            periods.append(
                s.purchase("20000001234\(56790 + i)", product: monthly, at: start, expires: start + month) { t in
                    if i == 0 {
                        t.offerType = 1
                        t.offerDiscountType = "FREE_TRIAL"
                    }
                })
            if i == 0 { s.claim("alice", at: start + Scenario.hour) }
            start += month
        }
        s.refund(periods[2], at: t0 + 2 * month + 5 * Scenario.day)
        s.claim("bob", at: t0 + 3 * month + 12 * Scenario.day)
        // The sixth period's renewal fails: a grace period, then billing recovers with a late renewal.
        let failed = start
        s.notification("DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signed: failed + Scenario.minute)
        s.renewalInfo(signed: failed + Scenario.minute + 1, product: monthly) {
            $0.isInBillingRetryPeriod = true
            $0.gracePeriodExpiresDate = failed + 16 * Scenario.day
        }
        let recovered = failed + 4 * Scenario.day
        s.purchase("2000000123456800", product: monthly, at: recovered, expires: recovered + month) {
            $0.transactionReason = "RENEWAL"
        }
        s.notification("DID_RENEW", subtype: "BILLING_RECOVERY", signed: recovered + 1)
        let upgrade = recovered + 10 * Scenario.day
        s.purchase("2000000123456801", product: yearly, at: upgrade, expires: upgrade + 365 * Scenario.day)
        let view = s.timeline().view(at: t0 + 3 * month + 20 * Scenario.day, asOf: nil, rules: rules)
        return (view, 8)
    }

    static func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

    // MARK: - The renderer

    @Test func theSamePictureIsTheSameBytesWithOneBarPerPeriod() throws {
        let storm = Self.restoreStorm()
        #expect(storm.periods.count == 12)
        let a = TimelinePicture(storm).svg, b = TimelinePicture(Self.restoreStorm()).svg
        #expect(a == b)
        #expect(Self.count("class=\"period ", in: a) == 12)
        #expect(a.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\""))
        // The two bursts three days apart: the stretch between them is shortened and says how long it was.
        #expect(a.contains("class=\"gap\""))
        #expect(a.contains(">2 d 20 h</text>"))
        // The restores show on the bars they copied (the fourth monthly period was restored seven times).
        #expect(a.contains(">+7</text>"))

        let (story, periods) = Self.refundAndTransfer()
        #expect(story.periods.count == periods)
        let svg = TimelinePicture(story).svg
        #expect(Self.count("class=\"period ", in: svg) == periods)
        #expect(Self.count("class=\"period trial", in: svg) == 1)
        #expect(Self.count("class=\"period normal revoked", in: svg) == 1)
        #expect(Self.count("class=\"revoked-span\"", in: svg) == 1)
        #expect(Self.count("class=\"grace-period\"", in: svg) == 1)
        #expect(Self.count("class=\"owner transfer\"", in: svg) == 1)
        #expect(Self.count("class=\"move\"", in: svg) == 1)
        #expect(svg.contains("class=\"cursor\""))
        #expect(svg.contains("<g class=\"mark plan\">") && svg.contains(">upgrade</text>"))
        let html = TimelinePicture(story).html
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(!html.contains("<script") && !html.contains("src=") && !html.contains("href="), "self-contained")
        #expect(Self.count("class=\"period ", in: html) == periods)
    }

    @Test func everyStringIsEscaped() throws {
        let hostile = "p\"><script>alert('x')</script>&"
        var s = Scenario(otid: "1<2&\"3\"")
        s.purchase("1", product: hostile, at: Self.t0, expires: Self.t0 + Self.month)
        s.claim("u'\"><img src=x onerror=alert(1)>", at: Self.t0)
        s.notification("SOMETHING_NEW", subtype: "<b>", signed: Self.t0 + Scenario.day)
        let view = s.timeline().view(at: Self.t0 + Scenario.day, asOf: 7)
        for text in [TimelinePicture(view).svg, TimelinePicture(view).html] {
            #expect(!text.contains("<script"))
            #expect(!text.contains("<img"))
            #expect(!text.contains("<b>"))
            #expect(!text.contains("1<2"))
            #expect(text.contains("p&quot;&gt;&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;"))
            #expect(text.contains("as known at log seq 7"))
        }
    }

    @Test func aLongMonthlySubscriptionHasYearTicksAndEveryBar() {
        var s = Scenario()
        var start = Self.t0
        for i in 0..<36 {
            s.purchase("\(5000 + i)", product: Self.monthly, at: start, expires: start + Self.month)
            start += Self.month
        }
        let svg = TimelinePicture(s.timeline().view(at: Self.t0 + 400 * Scenario.day, asOf: nil)).svg
        #expect(Self.count("class=\"period normal\"", in: svg) == 36)
        #expect(!svg.contains("class=\"gap\""), "nothing to shorten in an unbroken run of renewals")
        // About three years: ticks every three or six months, labelled by month.
        #expect(svg.contains(">2025-01</text>") || svg.contains(">2025</text>"))
    }

    /// Ledgers written by older builds may hold instants at the ends of Int64, and a caller of `TimelinePicture` may
    /// draw a view at any instant: the picture is drawn all the same, such instants at the axis's ends and said in
    /// full in the titles and tables.
    @Test(arguments: [
        (Int64.min, "-292275055-05-16T16:47:04Z"), (Int64.min + 1, "-292275055-05-16T16:47:04Z"),
        (-1, "1969-12-31T23:59:59Z"), (Int64.max - 1, "292278994-08-17T07:12:55Z"),
        (Int64.max, "292278994-08-17T07:12:55Z"),
    ])
    func instantsAtTheEndsOfInt64AreDrawnWithoutTrapping(extreme: Int64, text: String) {
        var s = Scenario()
        s.purchase("1", product: Self.monthly, at: Self.t0, expires: extreme)
        s.purchase("2", product: Self.yearly, at: Self.t0 + Scenario.day, expires: Self.t0 + Self.month)
        s.claim("u9", at: Self.t0)
        // A change stated at the extreme instant, and one that holds until it. (A billing retry stated there would
        // begin at the expiry: docs/domain.md, "Late statements".)
        s.notification("DID_CHANGE_RENEWAL_STATUS", subtype: "AUTO_RENEW_DISABLED", signed: extreme)
        s.renewalInfo(signed: Self.t0 + 2 * Scenario.day) { $0.gracePeriodExpiresDate = extreme }
        let timeline = s.timeline()
        for at in [Self.t0, extreme, .min, .max] {
            let view = timeline.view(at: at, asOf: nil)
            let picture = TimelinePicture(view)
            let svg = picture.svg, html = picture.html
            #expect(Self.count("class=\"period ", in: svg) == view.periods.count)
            #expect(svg.hasSuffix("</svg>\n") && html.hasSuffix("</html>\n"))
            #expect(html.contains(text), "the extreme instant is said in full")
        }
    }

    @Test func aViewWithNothingDrawnAtTheEndsOfInt64HasAnAxis() {
        for at in [Int64.min, Int64.max, 0] {
            let view = Scenario().timeline().view(at: at, asOf: nil)
            let svg = TimelinePicture(view).svg
            #expect(svg.contains("class=\"axis\""))
            #expect(svg.contains("class=\"cursor"))
        }
    }

    // MARK: - In a real browser

    static let chromium = HeadlessChromium.path

    static func load(_ file: String, screenshot: String? = nil) throws -> HeadlessChromium.Load {
        try HeadlessChromium.load(file, screenshot: screenshot)
    }

    static func write(_ text: String, _ name: String) throws -> String {
        let dir = NSTemporaryDirectory() + "storeledger-picture-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let path = dir + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The width and height a PNG states in its IHDR chunk.
    static func pngSize(_ path: String) throws -> (Int, Int) {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        try #require(bytes.count > 24 && bytes[1...3] == [0x50, 0x4E, 0x47])
        func be32(_ i: Int) -> Int { bytes[i..<(i + 4)].reduce(0) { $0 << 8 | Int($1) } }
        return (be32(16), be32(20))
    }

    @Test(
        .enabled(if: chromium != nil, "chromium is not installed: apt-get install -y chromium (then this test runs)"),
        .timeLimit(.minutes(5)))
    func thePagesLoadInChromiumWithNoConsoleErrorAndEveryPeriodBar() throws {
        // The check itself must be able to fail: a page with a script error and a missing image is caught.
        let broken = try Self.write(
            "<!DOCTYPE html><html><body><img src=\"missing.png\"><script>undefinedFunction()</script></body></html>",
            "broken.html")
        let caught = try Self.load(broken)
        #expect(caught.consoleMessages.contains { $0.contains("undefinedFunction") }, "the check sees a script error")
        #expect(caught.otherLoads.contains { $0.hasSuffix("/missing.png") }, "the check sees a page load another file")

        let (story, periods) = Self.refundAndTransfer()
        let stories: [(String, TimelineView, Int)] = [
            ("restore-storm", Self.restoreStorm(), 12), ("refund-and-transfer", story, periods),
        ]
        for (name, view, bars) in stories {
            let picture = TimelinePicture(view)
            for (file, text) in [("\(name).svg", picture.svg), ("\(name).html", picture.html)] {
                let loaded = try Self.load(try Self.write(text, file))
                #expect(loaded.consoleMessages.isEmpty, "\(file): \(loaded.consoleMessages)")
                #expect(loaded.otherLoads.isEmpty, "\(file) is self-contained: \(loaded.otherLoads)")
                #expect(!loaded.dom.contains("parsererror"), "\(file) parses as the browser reads it")
                #expect(Self.count("class=\"period ", in: loaded.dom) == bars, "\(file): one bar per period")
            }
            let page = try Self.write(picture.html, "\(name).html")
            let png = NSTemporaryDirectory() + "storeledger-picture-\(getpid())/\(name).png"
            _ = try Self.load(page, screenshot: png)
            let (width, height) = try Self.pngSize(png)
            #expect(width == 1280 && height == 900)
            if let dir = ProcessInfo.processInfo.environment["STORELEDGER_SCREENSHOT_DIR"] {
                let target = URL(fileURLWithPath: dir).appendingPathComponent("\(name).png")
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: URL(fileURLWithPath: png), to: target)
            }
        }
    }
}
