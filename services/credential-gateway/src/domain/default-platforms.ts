/**
 * The built-in platform catalog, used when CREDENTIAL_GATEWAY_PLATFORMS_FILE is not set. A deployment lists its own
 * platforms in a file of the same shape (see README "Credential gateway").
 */
export const DEFAULT_PLATFORMS = {
  platforms: [
    {
      slug: 'zendesk',
      label: 'Zendesk',
      credentialRequired: true,
      pageMatchers: [{ hostGlob: '*.zendesk.com', pageType: 'ticket', pathPattern: '/agent/tickets/*' }],
    },
    {
      slug: 'salesforce',
      label: 'Salesforce',
      credentialRequired: true,
      pageMatchers: [{ hostGlob: '*.lightning.force.com', pageType: 'case', pathPattern: '/lightning/r/Case/*/view' }],
    },
    {
      slug: 'hubspot',
      label: 'HubSpot',
      credentialRequired: true,
      pageMatchers: [{ hostGlob: 'app.hubspot.com', pageType: 'ticket', pathPattern: '/contacts/*/ticket/*' }],
    },
    {
      slug: 'jira',
      label: 'Jira',
      credentialRequired: true,
      pageMatchers: [{ hostGlob: '*.atlassian.net', pageType: 'issue', pathPattern: '/browse/*' }],
    },
    {
      slug: 'github',
      label: 'GitHub',
      credentialRequired: false,
      pageMatchers: [{ hostGlob: 'github.com', pageType: 'issue', pathPattern: '/*/*/issues/*' }],
    },
  ],
};
