import Foundation

/// The distribution's Chromium, headless, as the tests of the pages the ledger writes use it (the timeline pictures,
/// the console): a page loaded from a file, its DOM after load, its console messages and every other file it loaded.
public enum HeadlessChromium {
    /// The browser, if installed (`apt-get install -y chromium`).
    public static let path: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    public struct Load: Sendable {
        public var dom: String
        /// Every console message (the pages run no script: any message is an error, as a parse error is).
        public var consoleMessages: [String]
        /// Every file the page loaded besides itself (a self-contained page loads none).
        public var otherLoads: [String]
    }

    public struct NotInstalled: Error {}

    /// Loads `file` in headless Chromium: the DOM after load, and the console messages and loads its log states
    /// (`--log-level=0` logs console messages as `INFO:CONSOLE`, `--v=1` every file load). With `screenshot`, a PNG of
    /// the window (`height` pixels tall) is written there instead of the DOM.
    public static func load(_ file: String, screenshot: String? = nil, height: Int = 900) throws -> Load {
        guard let chromium = path else { throw NotInstalled() }
        let profile = NSTemporaryDirectory() + "storeledger-chromium-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: profile) }
        var arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--enable-logging=stderr", "--log-level=0", "--v=1", "--hide-scrollbars",
            "--window-size=1280,\(height)", "--user-data-dir=" + profile,
        ]
        if let screenshot { arguments.append("--screenshot=" + screenshot) } else { arguments.append("--dump-dom") }
        arguments.append(URL(fileURLWithPath: file).absoluteString)
        // Through `runProcess` (posix_spawn, its output read as it comes, reads interrupted by signals retried).
        let run = try runProcess(chromium, arguments, deadline: 120)
        let lines = run.stderr.split(separator: "\n").map(String.init)
        let page = URL(fileURLWithPath: file).absoluteString
        let loadMark = "FileURLLoader::Start: "
        return Load(
            dom: run.stdout,
            consoleMessages: lines.filter { $0.contains(":CONSOLE") },
            otherLoads: lines.compactMap { line in
                guard let r = line.range(of: loadMark) else { return nil }
                let url = String(line[r.upperBound...])
                return url == page ? nil : url
            })
    }
}
