// swift-tools-version: 6.1
import Foundation
import PackageDescription

// libFuzzer targets, one per decoder, one for the HTTP request path, one for the read routes' query strings and one
// for damaged ledgers. A package of their own so that the main
// `swift build` / `swift test` never builds them; `tools/fuzz/run.sh` builds them (every Swift module with
// `-sanitize=fuzzer,address`) and runs one.

// The root package is a path dependency, known by its folder's name; a clone may be named anything, so derive it.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "StoreLedgerFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", exact: "1.7.4"),
    ],
    targets: [
        .target(name: "CFuzzDriver"),
        // The root's test fixtures, which it does not ship as a product: `Sources/TestFixtures` links to
        // `Tests/LedgerTestSupport`. Its encoding surgery uses the codec's `package` types, which another package
        // cannot see; no target here needs it.
        .target(
            name: "TestFixtures",
            dependencies: [
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerCodec", package: root),
                .product(name: "LedgerErrors", package: root),
                .product(name: "LedgerClient", package: root),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            exclude: ["EncodingSurgery.swift"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FuzzSupport",
            dependencies: [
                "CFuzzDriver",
                "TestFixtures",
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerCodec", package: root),
                .product(name: "LedgerAppStore", package: root),
                .product(name: "LedgerErrors", package: root),
            ],
            swiftSettings: swiftSettings
        ),
        fuzzTarget("FuzzReceipt"),
        fuzzTarget("FuzzNotificationV1"),
        fuzzTarget("FuzzNotificationV2"),
        fuzzTarget("FuzzJWS"),
        fuzzTarget("FuzzEnvelope"),
        fuzzTarget("FuzzFraming", uses: [.product(name: "LedgerIngest", package: root)]),
        fuzzTarget(
            "FuzzHTTP",
            uses: [
                "TestFixtures",
                .product(name: "LedgerClient", package: root),
                .product(name: "LedgerServer", package: root),
                .product(name: "LedgerAPI", package: root),
                .product(name: "LedgerStore", package: root),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        fuzzTarget(
            "FuzzQuery",
            uses: [
                "TestFixtures",
                .product(name: "LedgerServer", package: root),
                .product(name: "LedgerAPI", package: root),
                .product(name: "LedgerStore", package: root),
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerErrors", package: root),
                .product(name: "LedgerClient", package: root),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        fuzzTarget(
            "FuzzDamagedLedger",
            uses: [
                "TestFixtures",
                .product(name: "LedgerStore", package: root),
                .product(name: "LedgerIngest", package: root),
                .product(name: "LedgerAPI", package: root),
                .product(name: "LedgerAppStore", package: root),
                .product(name: "LedgerCore", package: root),
                .product(name: "LedgerErrors", package: root),
                .product(name: "Logging", package: "swift-log"),
            ]),
    ]
)

/// One libFuzzer target: `Sources/<name>/<name>.swift` defines `LLVMFuzzerTestOneInput` and `<name>_main`, the entry
/// point SwiftPM links `main` to, which hands over to libFuzzer's driver (`-parse-as-library`: no top-level code).
func fuzzTarget(_ name: String, uses: [Target.Dependency] = []) -> Target {
    .executableTarget(
        name: name,
        dependencies: ["FuzzSupport"] + uses,
        swiftSettings: swiftSettings + [.unsafeFlags(["-parse-as-library"])]
    )
}
