#if canImport(Glibc)
import Glibc
#endif
import Foundation
import LedgerClient
import LedgerTestSupport
import Testing

/// The web console (`/console/`) of a `storeledger serve` process on the demo's ledger: the overview, the customer
/// lookup and the subscription page answer with the demo's figures (and as known before its late refund), every link
/// they hold answers, what a customer id carries is escaped, errors are pages with their code; and, in a real
/// headless Chromium, every page loads with no console message and nothing but itself. Screenshots go to
/// `STORELEDGER_SCREENSHOT_DIR` when set (`tools/screenshots.sh` writes the README's).
@Suite(.serialized, .timeLimit(.minutes(5)), .blocking)
struct ConsoleTests {
    static let otid = "1000000741475761"

    struct Page {
        var status: Int
        var headers: [String: String]
        var html: String

        func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name }?.value }
    }

    static func page(_ client: AsyncLedgerClient, _ path: String) async throws -> Page {
        let r = try await client.get(path)
        return Page(status: r.status, headers: r.headers, html: String(decoding: r.body, as: UTF8.self))
    }

    /// Every `href` of a page that stays in the console, as a request path (`&amp;` unescaped).
    static func links(_ html: String) -> [String] {
        html.components(separatedBy: "href=\"").dropFirst().compactMap { rest in
            let link = String(rest.prefix { $0 != "\"" }).replacingOccurrences(of: "&amp;", with: "&")
            return link.hasPrefix("/console") ? link : nil
        }
    }

    static func count(_ needle: String, in html: String) -> Int { html.components(separatedBy: needle).count - 1 }

    /// `body` with a client of a `storeledger serve` process on a fresh demo ledger in `dir`.
    static func withDemoServer(
        _ body: (TemporaryDirectory, AsyncLedgerClient) async throws -> Void
    ) async throws {
        let dir = try TemporaryDirectory(prefix: "sl-console")
        defer { dir.remove() }
        let ledger = dir.file("demo")
        let demo = try runProcess(storeledgerExecutable(), ["demo", "--data", ledger], deadline: 120)
        try #require(demo.status == 0, "\(demo.stderr)")
        let server = try ServerProcess(data: ledger)
        defer { server.killAndWait() }
        try await server.waitUntilAnswering()
        try await body(dir, try AsyncLedgerClient(socketPath: server.socketPath, timeoutSeconds: 30))
    }

    @Test func theConsoleShowsTheDemoLedgerAndEveryLinkAnswers() async throws {
        try await Self.withDemoServer { _, client in try await Self.pagesAndLinks(client) }
    }

    static func pagesAndLinks(_ client: AsyncLedgerClient) async throws {

        // The overview, as known now: seq 7 of 7, a year by day and twelve months, the late refund counted.
        let overview = try await page(client, "/console/")
        #expect(overview.status == 200)
        #expect(overview.header("content-type") == "text/html; charset=utf-8")
        #expect(overview.header("content-security-policy")?.hasPrefix("default-src 'none'") == true)
        #expect(overview.html.contains("Figures as known at log seq <strong>7</strong> of 7; read from the figures the ledger maintains"))
        #expect(Self.count("data-points=\"365\"", in: overview.html) == 1, "subscriptions by day over a year")
        #expect(Self.count("data-points=\"12\"", in: overview.html) == 3, "movements, conversion, refunds by month")
        let refundBar = #/<title>refunds \d{4}-\d{2}-01: 1</title>/#
        #expect(overview.html.contains(refundBar), "the late refund is counted in the month it is dated in")
        #expect(overview.html.contains("<title>new 2020-11-01: 1</title>"), "the purchase of 13 November 2020")
        // As known at seq 5, before the refund arrived: a past position, no refund.
        let before = try await page(client, "/console/?asOf=5")
        #expect(before.html.contains("Figures as known at log seq <strong>5</strong> of 7 (a past position"))
        #expect(!before.html.contains(refundBar), "the refund told at seq 6 is not known at seq 5")
        #expect(before.html.contains("folded from every subscription"))
        // The form as a browser sends it: every field, the date as a date, the product left empty.
        let submitted = try await Self.page(
            client, "/console/?environment=Production&asOf=7&to=2021-01-31&productId=&entitlement=")
        #expect(submitted.status == 200)
        // premium is the demo product's entitlement (examples/config.json): the same figures; another, none.
        let premium = try await page(client, "/console/?entitlement=premium")
        #expect(premium.html.contains("<title>new 2020-11-01: 1</title>"))
        let other = try await page(client, "/console/?entitlement=gold")
        #expect(!other.html.contains("<title>new 2020-11-01: 1</title>") && other.html.contains("value=\"gold\""))
        #expect(submitted.html.contains("value=\"2021-01-31\""), "the year up to 31 January 2021")

        // Customer lookup: the form alone, then alice (whose subscription bob took over) and bob.
        let lookup = try await page(client, "/console/customers")
        #expect(lookup.status == 200 && lookup.html.contains("<label for=\"appUserId\">App user id</label>"))
        let bobNow = try await page(client, "/console/customers?appUserId=bob")
        #expect(bobNow.status == 200)
        #expect(bobNow.html.contains("<th scope=\"row\">premium</th><td>inactive</td>"), "the demo's story ended in 2021")
        #expect(bobNow.html.contains("<details><summary>expired</summary>"), "why bob has premium no more")
        let at = "at=2021-01-17T04:59:30Z"
        let bob = try await page(client, "/console/customers?appUserId=bob&\(at)")
        #expect(bob.html.contains("<th scope=\"row\">premium</th><td>active</td><td>2021-02-11T04:59:30Z</td>"), "bob's restore")
        #expect(bob.html.contains("<details><summary>purchase</summary>"), "why bob has premium")
        #expect(
            bob.html.contains(
                "<a href=\"/console/subscriptions/\(Self.otid)?environment=Production&amp;at=2021-01-17T04%3A59%3A30Z\">\(Self.otid)</a>"),
            "the subscription, at the same instant")
        #expect(bob.html.contains("<svg") && bob.html.contains("class=\"timeline\""), "the subscription's timeline picture")
        let alice = try await page(client, "/console/customers?appUserId=alice&\(at)")
        #expect(alice.html.contains("<th scope=\"row\">premium</th><td>inactive</td>"), "alice lost premium to bob's restore")
        let aliceRefunded = try await page(client, "/console/customers?appUserId=alice&at=2021-01-01T00:00:00Z")
        #expect(aliceRefunded.html.contains("<th scope=\"row\">premium</th><td>inactive</td><td>2020-12-23T04:59:30Z</td>"))
        #expect(aliceRefunded.html.contains("<details><summary>refunded</summary>"), "her renewal was refunded")
        let aliceBefore = try await page(client, "/console/customers?appUserId=alice&at=2021-01-01T00:00:00Z&asOf=5")
        #expect(
            aliceBefore.html.contains("<th scope=\"row\">premium</th><td>active</td>"),
            "as known at seq 5, before the late refund was told")
        let aliceEarlier = try await page(client, "/console/customers?appUserId=alice&at=2021-01-01T00:00:00Z&asOf=2")
        #expect(aliceEarlier.html.contains("<p>No entitlement"), "as known at seq 2, nothing was bought yet")

        // The subscription: its events with their raw inputs and signature status, reconciliation, lifecycle.
        let subscription = try await page(client, "/console/subscriptions/\(Self.otid)?\(at)")
        #expect(subscription.status == 200)
        #expect(subscription.html.contains("<h2>Events (6)</h2>"), "the claim, three transactions, the refund, bob's claim")
        #expect(subscription.html.contains("<td class=\"sig-unsigned\">unsigned</td>"))
        #expect(subscription.html.contains("<details><summary>") && subscription.html.contains("\(Self.otid)"))
        #expect(subscription.html.contains("Never checked against Apple"))
        #expect(subscription.html.contains("status at 2021-01-17T04:59:30Z: <strong>active</strong>"))
        #expect(subscription.html.contains("/console/customers?appUserId=bob&amp;environment=Production&amp;at="), "its owners")
        let early = try await page(client, "/console/subscriptions/\(Self.otid)?\(at)&asOf=4")
        #expect(early.html.contains("<h2>Events (3)</h2>"), "as known at seq 4: alice's claim, the purchase, the renewal")

        // Every link of every page answers.
        var seen = Set<String>()
        for shown in [overview, before, lookup, bobNow, bob, alice, aliceEarlier, subscription, early] {
            for link in Self.links(shown.html) where seen.insert(link).inserted {
                let answer = try await page(client, link)
                #expect(answer.status == 200, "\(link): \(answer.status)")
            }
        }
        #expect(seen.contains("/console/subscriptions/\(Self.otid)?environment=Production&at=2021-01-17T04%3A59%3A30Z"))
        #expect(seen.contains("/console/customers"))

        // Errors are pages too, with their code and status; what a customer id carries is escaped.
        let unknown = try await page(client, "/console/subscriptions/42")
        #expect(unknown.status == 404 && unknown.html.contains("<strong>not_found</strong>"))
        let bad = try await page(client, "/console/?asOf=yesterday")
        #expect(bad.status == 400 && bad.html.contains("<strong>invalid_query</strong>"))
        let hostile = try await page(client, "/console/customers?appUserId=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        #expect(hostile.status == 200)
        #expect(!hostile.html.contains("<script"), "no markup from the query reaches the page")
        #expect(hostile.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))

    }

    /// In a real browser: no console message, nothing loaded but the page, the charts drawn.
    @Test(.enabled(if: HeadlessChromium.path != nil, "chromium is not installed: apt-get install -y chromium (.ci/run does)"))
    func theConsolesPagesLoadInChromiumWithNoConsoleErrorAndNothingElseLoaded() async throws {
        try await Self.withDemoServer { dir, client in
            let shots = ProcessInfo.processInfo.environment["STORELEDGER_SCREENSHOT_DIR"]
            for (name, path, height) in [
                ("console-overview", "/console/", 2200),
                ("console-customer", "/console/customers?appUserId=bob&at=2021-01-17T04:59:30Z", 1500),
                ("console-subscription", "/console/subscriptions/\(Self.otid)?at=2021-01-17T04:59:30Z", 1700),
                ("console-hostile", "/console/customers?appUserId=%3Cscript%3Ealert(1)%3C%2Fscript%3E", 900),
            ] {
                let page = try await Self.page(client, path)
                #expect(page.status == 200, "\(path)")
                let file = dir.file("\(name).html")
                try page.html.write(toFile: file, atomically: true, encoding: .utf8)
                let loaded = try HeadlessChromium.load(file)
                #expect(loaded.consoleMessages.isEmpty, "\(name): \(loaded.consoleMessages)")
                #expect(loaded.otherLoads.isEmpty, "\(name) loads only itself: \(loaded.otherLoads)")
                #expect(loaded.dom.contains("<main id=\"main\">"), "\(name) rendered")
                if name == "console-overview" {
                    #expect(Self.count("<svg", in: loaded.dom) == 4, "\(name)'s charts: \(Self.count("<svg", in: loaded.dom))")
                }
                if name == "console-hostile" {
                    #expect(!loaded.dom.contains("<script"), "no script element in the page the browser built")
                }
                if let shots, name != "console-hostile" {
                    _ = try HeadlessChromium.load(file, screenshot: shots + "/\(name).png", height: height)
                }
            }
        }
    }
}
