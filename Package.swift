// swift-tools-version: 6.1
import PackageDescription

/// One set of settings for every target (as swift-nio does): Swift 6 language mode comes with the tools version.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "StoreLedger",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "storeledger", targets: ["storeledger"]),
        .executable(name: "loadgen", targets: ["loadgen"]),
        .library(name: "LedgerCore", targets: ["LedgerCore"]),
        .library(name: "LedgerCodec", targets: ["LedgerCodec"]),
        .library(name: "LedgerAppStore", targets: ["LedgerAppStore"]),
        .library(name: "LedgerStore", targets: ["LedgerStore"]),
        .library(name: "LedgerErrors", targets: ["LedgerErrors"]),
        .library(name: "LedgerAPI", targets: ["LedgerAPI"]),
        .library(name: "LedgerIngest", targets: ["LedgerIngest"]),
        .library(name: "LedgerServer", targets: ["LedgerServer"]),
        .library(name: "LedgerClient", targets: ["LedgerClient"]),
        .library(name: "NATSClient", targets: ["NATSClient"]),
        .library(name: "LedgerAppleAPI", targets: ["LedgerAppleAPI"]),
    ],
    // Each dependency at the exact version this machine's package mirror serves, so that a build in a year
    // resolves the same code. Their own dependencies resolve within the ranges these versions state; the versions
    // resolved are listed in dependencies.txt, which `tools/check-dependencies.sh` (run by .ci/run) compares with
    // Package.resolved. To upgrade: change a version here, `swift package update`, then
    // `tools/check-dependencies.sh --write` and commit both files.
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", exact: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", exact: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras", exact: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        // Every outbound HTTP request: Apple's API and the webhook (LedgerHTTP), the ledger's own client over its
        // Unix socket (LedgerClient).
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        // Test-only: the OpenAPI document is parsed and validated by a real OpenAPI library (LedgerServerTests).
        .package(url: "https://github.com/mattpolzin/OpenAPIKit", exact: "6.4.0", traits: []),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
    ],
    targets: [
        // MARK: - Storage
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        // Tells a fault inside LMDB, or within its map, from any other (a signal handler, in C).
        .target(name: "CLMDBGuard"),
        .target(name: "LMDB", dependencies: ["CLMDB", "CLMDBGuard"], swiftSettings: swiftSettings),

        // MARK: - Domain
        .target(name: "LedgerCore", swiftSettings: swiftSettings),
        // The error codes and the Unix socket: below every layer that refuses, and below the client.
        .target(name: "LedgerErrors", swiftSettings: swiftSettings),
        .target(name: "LedgerCodec", dependencies: ["LedgerCore"], swiftSettings: swiftSettings),
        .target(
            name: "LedgerAppStore",
            dependencies: [
                "LedgerCore",
                "LedgerErrors",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LedgerStore",
            dependencies: [
                "LedgerCore",
                "LedgerCodec",
                "LedgerErrors",
                "LMDB",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Serving
        .target(
            name: "LedgerIngest",
            dependencies: ["LedgerCore", "LedgerErrors", "LedgerAppStore", "LedgerStore"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LedgerAPI",
            dependencies: ["LedgerCore", "LedgerErrors", "LedgerAppStore", "LedgerStore"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "LedgerServer",
            dependencies: [
                "LedgerCore",
                "LedgerErrors",
                "LedgerAPI",
                "LedgerIngest",
                "LedgerAppStore",
                "LedgerStore",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The connection guard sits in the HTTP pipeline: parser errors and request parts.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                // The connection's own handlers go in front of Hummingbird's conversion to HTTP types.
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                // The webhook: its receiver reached through LedgerHTTP, its signature (HMAC-SHA256).
                "LedgerHTTP",
                // Before binding, whether another server answers on the socket's path (`UnixSocket`).
                "LedgerClient",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            exclude: ["openapi.yaml"],
            swiftSettings: swiftSettings
        ),
        // The ledger's client over its Unix socket (HTTP through AsyncHTTPClient's http+unix).
        .target(
            name: "LedgerClient",
            dependencies: [
                "LedgerErrors",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Outbound HTTP to a configured service (Apple's API, the webhook's receiver): AsyncHTTPClient with the
        // configured trust roots and no redirects.
        .target(
            name: "LedgerHTTP",
            dependencies: [
                "LedgerErrors",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The smallest NATS client the replicated intake needs (the text protocol and JetStream's JSON API).
        .target(
            name: "NATSClient",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The replicated intake: accepted inputs go through a JetStream stream, and every replica appends them in
        // the stream's order (storeledger serve --intake).
        .target(
            name: "LedgerReplication",
            dependencies: [
                "NATSClient", "LedgerCore", "LedgerErrors", "LedgerAppStore", "LedgerStore", "LedgerIngest",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Asking Apple: the App Store Server API client (JWT, paging, 429) and reconciliation through the ingest path.
        .target(
            name: "LedgerAppleAPI",
            dependencies: [
                "LedgerCore",
                "LedgerErrors",
                "LedgerAppStore",
                "LedgerStore",
                "LedgerIngest",
                "LedgerHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "storeledger",
            dependencies: [
                "LedgerCore",
                "LedgerErrors",
                "LedgerAppStore",
                "LedgerStore",
                "LedgerAPI",
                "LedgerIngest",
                "LedgerServer",
                "LedgerClient",
                "LedgerReplication",
                "NATSClient",
                "LedgerAppleAPI",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "loadgen",
            dependencies: [
                "LedgerErrors",
                "LedgerClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/loadgen",
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests
        // Fixtures and helpers for the test targets only: a target, not a product, so nothing ships it.
        .target(
            name: "LedgerTestSupport",
            dependencies: [
                "LedgerCore",
                "LedgerCodec",
                "LedgerErrors",
                "LedgerClient",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            path: "Tests/LedgerTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB"], swiftSettings: swiftSettings),
        .testTarget(
            name: "LedgerCoreTests", dependencies: ["LedgerCore", "LedgerCodec", "LedgerTestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "LedgerCodecTests", dependencies: ["LedgerCodec", "LedgerCore", "LedgerTestSupport"],
            swiftSettings: swiftSettings),
        .testTarget(
            name: "LedgerAppStoreTests",
            dependencies: ["LedgerAppStore", "LedgerCore", "LedgerCodec", "LedgerErrors", "LedgerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerStoreTests",
            dependencies: [
                "LedgerStore", "LedgerCore", "LedgerCodec", "LedgerAppStore", "LedgerAPI", "LedgerErrors",
                "LedgerTestSupport", "LMDB", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "LedgerErrorsTests", dependencies: ["LedgerErrors"], swiftSettings: swiftSettings),
        .testTarget(
            name: "NATSClientTests",
            dependencies: ["NATSClient", "LedgerTestSupport", "LedgerReplication", "LedgerClient", "LedgerErrors", "storeledger"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerAPITests",
            dependencies: ["LedgerAPI", "LedgerErrors", "LedgerCore", "LedgerStore", "LedgerIngest", "LedgerTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerIngestTests",
            dependencies: ["LedgerIngest", "LedgerErrors", "LedgerCore", "LedgerAppStore", "LedgerStore", "LedgerTestSupport",
                "LMDB", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerServerTests",
            dependencies: [
                "LedgerServer", "LedgerAPI", "LedgerIngest", "LedgerErrors", "LedgerStore", "LedgerCore", "LedgerAppStore",
                "LedgerClient", "LedgerTestSupport",
                // The webhook's HTTPS receiver (WebhookTLSTests) and the signature it checks.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "OpenAPIKit", package: "OpenAPIKit"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerAppleAPITests",
            dependencies: [
                "LedgerAppleAPI", "LedgerAPI", "LedgerIngest", "LedgerErrors", "LedgerStore", "LedgerCore", "LedgerAppStore",
                "LedgerTestSupport",
                // Built first: ReconcileCommandTests run the executable.
                "storeledger",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StoreLedgerCLITests",
            dependencies: [
                "LedgerTestSupport", "LedgerClient", "LedgerErrors", "storeledger", "LMDB", "LedgerAPI", "LedgerAppStore",
                "LedgerCore", "LedgerIngest", "LedgerReplication", "LedgerStore", .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
