/// What the app sells, as configured (`products` in the configuration file, docs/configuration.md): which entitlements
/// each product grants, its type, group, duration (non-renewing) and credits (consumables). Products missing from the catalog still
/// grant an entitlement named after their product id (DOMAIN §6).
public struct Catalog: Hashable, Sendable, Codable {
    /// Product id → configuration.
    public var products: [String: ProductConfiguration]

    public init(products: [String: ProductConfiguration] = [:]) { self.products = products }

    public init(from decoder: any Decoder) throws {
        products = try decoder.singleValueContainer().decode([String: ProductConfiguration].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(products)
    }

    /// The configuration of a product, if the catalog names it.
    public func configuration(for productId: String) -> ProductConfiguration? { products[productId] }

    /// The entitlements a product grants: the configured list, or (unconfigured, or configured without a list) the
    /// product id itself, except for consumables, which grant credits instead.
    public func entitlements(for productId: String, type: ProductType? = nil) -> [String] {
        let config = products[productId]
        if let list = config?.entitlements { return list }
        if (config?.type ?? type) == .consumable { return [] }
        return [productId]
    }

    /// Non-renewing products configured without a duration, sorted. Apple states no expiry for them: the catalog's
    /// duration is their only end, so a configuration naming one is refused.
    public var nonRenewingProductsWithoutDuration: [String] {
        products.filter { $0.value.type == .nonRenewing && $0.value.duration == nil }.keys.sorted()
    }

    /// Credits one unit of a consumable product grants (empty when the catalog names none).
    public func credits(for productId: String) -> [String: Int64] { products[productId]?.credits ?? [:] }
}

/// One product's configuration (the configuration's `products` values).
public struct ProductConfiguration: Hashable, Sendable, Codable {
    public var type: ProductType?
    /// Nil means "not configured": the product then grants an entitlement named after itself.
    public var entitlements: [String]?
    /// Subscription group.
    public var group: String?
    /// Access length of a non-renewing subscription, counted from its `originalPurchaseDate`.
    public var duration: CalendarDuration?
    /// Credits per unit of a consumable.
    public var credits: [String: Int64]
    /// Service level inside the group (higher is better), so that plan changes can be named upgrade, downgrade or
    /// crossgrade. Optional: without levels an immediate change is an upgrade and a change at renewal a downgrade.
    public var level: Int?

    public init(
        type: ProductType? = nil, entitlements: [String]? = nil, group: String? = nil, duration: CalendarDuration? = nil,
        credits: [String: Int64] = [:], level: Int? = nil
    ) {
        self.type = type
        self.entitlements = entitlements
        self.group = group
        self.duration = duration
        self.credits = credits
        self.level = level
    }

    enum CodingKeys: String, CodingKey { case type, entitlements, group, duration, credits, level }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let name = try c.decodeIfPresent(String.self, forKey: .type) {
            guard let t = ProductType(name: name) else {
                throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown product type \(name)")
            }
            type = t
        }
        entitlements = try c.decodeIfPresent([String].self, forKey: .entitlements)
        group = try c.decodeIfPresent(String.self, forKey: .group)
        if let text = try c.decodeIfPresent(String.self, forKey: .duration) {
            guard let d = CalendarDuration(iso8601: text) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .duration, in: c, debugDescription: "duration \(text) is not ISO-8601 like P1M, P7D, P1Y")
            }
            duration = d
        }
        credits = try c.decodeIfPresent([String: Int64].self, forKey: .credits) ?? [:]
        level = try c.decodeIfPresent(Int.self, forKey: .level)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(type?.catalogName, forKey: .type)
        try c.encodeIfPresent(entitlements, forKey: .entitlements)
        try c.encodeIfPresent(group, forKey: .group)
        try c.encodeIfPresent(duration?.description, forKey: .duration)
        if !credits.isEmpty { try c.encode(credits, forKey: .credits) }
        try c.encodeIfPresent(level, forKey: .level)
    }
}

extension ProductType {
    /// The short name the configuration file uses (`autoRenewable`, `nonRenewing`, `nonConsumable`, `consumable`).
    public var catalogName: String {
        switch self {
        case .autoRenewable: "autoRenewable"
        case .nonRenewing: "nonRenewing"
        case .nonConsumable: "nonConsumable"
        case .consumable: "consumable"
        }
    }
}

/// How a second app user's claim on an already bound OTID is treated (DOMAIN §5).
public enum BindingPolicy: String, Hashable, Sendable, Codable, CaseIterable {
    /// The claimant becomes the owner from the claim's instant; the previous owner loses access then.
    case transfer
    /// The first owner keeps it; later claims are recorded as refused.
    case keep
    /// Every claimant becomes an owner, side by side.
    case share
}

/// Everything configurable that the fold depends on. Decodes from the configuration JSON (docs/configuration.md), reading only its
/// `products` and `bindingPolicy` keys; absent keys keep the defaults (empty catalog, `transfer`).
public struct FoldRules: Hashable, Sendable, Codable {
    public var catalog: Catalog
    public var bindingPolicy: BindingPolicy

    public init(catalog: Catalog = Catalog(), bindingPolicy: BindingPolicy = .transfer) {
        self.catalog = catalog
        self.bindingPolicy = bindingPolicy
    }

    enum CodingKeys: String, CodingKey {
        case catalog = "products"
        case bindingPolicy
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        catalog = try c.decodeIfPresent(Catalog.self, forKey: .catalog) ?? Catalog()
        bindingPolicy = try c.decodeIfPresent(BindingPolicy.self, forKey: .bindingPolicy) ?? .transfer
    }
}
