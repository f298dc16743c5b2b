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
        .library(name: "LedgerServer", targets: ["LedgerServer"]),
        .library(name: "LedgerClient", targets: ["LedgerClient"]),
        .library(name: "LedgerTestSupport", targets: ["LedgerTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // MARK: - Storage
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(name: "LMDB", dependencies: ["CLMDB"], swiftSettings: swiftSettings),

        // MARK: - Domain
        .target(name: "LedgerCore", swiftSettings: swiftSettings),
        .target(name: "LedgerCodec", dependencies: ["LedgerCore"], swiftSettings: swiftSettings),
        .target(
            name: "LedgerAppStore",
            dependencies: [
                "LedgerCore",
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
                "LMDB",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Serving
        .target(
            name: "LedgerServer",
            dependencies: [
                "LedgerCore",
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
            ],
            exclude: ["openapi.yaml"],
            swiftSettings: swiftSettings
        ),
        .target(name: "LedgerClient", swiftSettings: swiftSettings),
        .executableTarget(
            name: "storeledger",
            dependencies: [
                "LedgerCore",
                "LedgerAppStore",
                "LedgerStore",
                "LedgerServer",
                "LedgerClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "loadgen",
            dependencies: [
                "LedgerClient",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "tools/loadgen",
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests
        .target(
            name: "LedgerTestSupport",
            dependencies: [
                "LedgerCore",
                "LedgerCodec",
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
            dependencies: ["LedgerAppStore", "LedgerCore", "LedgerCodec", "LedgerTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerStoreTests",
            dependencies: ["LedgerStore", "LedgerCore", "LedgerCodec", "LedgerAppStore", "LedgerTestSupport", "LMDB"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "LedgerServerTests",
            dependencies: [
                "LedgerServer", "LedgerStore", "LedgerCore", "LedgerAppStore", "LedgerClient", "LedgerTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StoreLedgerCLITests",
            dependencies: ["LedgerTestSupport", "LedgerClient", "storeledger", "LMDB"],
            swiftSettings: swiftSettings
        ),
    ]
)
