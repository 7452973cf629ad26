import { buildCatalog, etagMatches, mayUse, resourceAllowed } from '../src/domain/catalog';
import { DEFAULT_PLATFORMS } from '../src/domain/default-platforms';

const entry = (over: Record<string, unknown> = {}) => ({
  slug: 'desk',
  label: 'Desk',
  pageMatchers: [{ hostGlob: '*.desk.example', pageType: 'ticket', pathPattern: '/t/*' }],
  ...over,
});

describe('platform catalog', () => {
  test('when no file is configured, then the built-in catalog is valid and public entries carry exactly the spec fields', () => {
    const c = buildCatalog(DEFAULT_PLATFORMS, 'built-in');
    expect(c.body.platforms.length).toBeGreaterThan(0);
    for (const p of c.body.platforms)
      expect(Object.keys(p).sort()).toEqual(['credentialRequired', 'label', 'pageMatchers', 'slug']);
  });

  test('when a catalog has duplicate slugs, unknown fields or a bad slug, then building it fails with a readable list', () => {
    expect(() => buildCatalog({ platforms: [entry(), entry()] }, 'f.json')).toThrow(
      /f\.json[\s\S]*slugs must be unique/,
    );
    expect(() => buildCatalog({ platforms: [entry({ color: 'red' })] }, 'f.json')).toThrow(/color/);
    expect(() => buildCatalog({ platforms: [entry({ slug: 'Bad Slug' })] }, 'f.json')).toThrow(/platforms\.0\.slug/);
  });

  test('when the catalog changes, then its ETag changes; the same catalog keeps its ETag', () => {
    const a = buildCatalog({ platforms: [entry()] }, 'a');
    expect(buildCatalog({ platforms: [entry()] }, 'b').etag).toBe(a.etag);
    expect(buildCatalog({ platforms: [entry({ label: 'Desk 2' })] }, 'c').etag).not.toBe(a.etag);
    expect(etagMatches(a.etag, a.etag)).toBe(true);
    expect(etagMatches(`W/${a.etag}`, a.etag)).toBe(true);
    expect(etagMatches('*', a.etag)).toBe(true);
    expect(etagMatches('"x"', a.etag)).toBe(false);
    expect(etagMatches(undefined, a.etag)).toBe(false);
  });

  test('when an entry limits app types or tenants, then only those may use it', () => {
    const c = buildCatalog(
      { platforms: [entry({ appTypes: ['support_copilot'], tenantIds: ['t1'] }), entry({ slug: 'open' })] },
      'x',
    );
    expect(mayUse(c.find('desk')!, { appType: 'support_copilot', tenantId: 't1' })).toBe(true);
    expect(mayUse(c.find('desk')!, { appType: 'web_client', tenantId: 't1' })).toBe(false);
    expect(mayUse(c.find('desk')!, { appType: 'support_copilot', tenantId: 't2' })).toBe(false);
    expect(mayUse(c.find('open')!, { appType: 'api', tenantId: 't2' })).toBe(true);
  });

  test('when a resource is checked, then only http(s) URLs on a host matching a host glob pass', () => {
    const p = buildCatalog({ platforms: [entry()] }, 'x').find('desk')!;
    expect(resourceAllowed(p, 'https://acme.desk.example/t/1')).toBe(true);
    expect(resourceAllowed(p, 'https://ACME.Desk.Example/')).toBe(true);
    expect(resourceAllowed(p, 'https://desk.example/')).toBe(false);
    expect(resourceAllowed(p, 'https://acme.desk.example.evil.test/')).toBe(false);
    expect(resourceAllowed(p, 'https://acme.desk.example/#frag')).toBe(false);
    expect(resourceAllowed(p, 'javascript:alert(1)')).toBe(false);
  });
});
