import type { EmailTemplateSet } from "../../config/AuthConfig.js"
import type { MessageLocale } from "../../domain/MessageLocale.js"

/** Every mail the server sends, by the name its settings use (MAILER_SUBJECTS_<KIND>, MAILER_TEMPLATES_<KIND>). */
export type MailKind = keyof EmailTemplateSet<unknown>

/** The words of the link confirmation page (MAILER_LINK_CONFIRM_PAGE). */
export interface ConfirmPageTexts {
  readonly title: string
  readonly heading: string
  readonly explanation: string
  readonly button: string
}

/** One locale's built-in wording, used wherever the operator gave none for that locale. */
export interface LocaleTexts {
  readonly mail: { readonly [K in MailKind]: { readonly subject: string; readonly heading: string } }
  /** The link's text in the built-in HTML body. */
  readonly followLink: string
  /** Before the code in the HTML body. */
  readonly enterCode: string
  /** Before the code in the text body. */
  readonly codeLabel: string
  /** The texted body: a Go template in which `{{ .Code }}` is the code (SMS_TEMPLATE's form). */
  readonly sms: string
  readonly confirmPage: ConfirmPageTexts
}

/**
 * The built-in texts. English is what Gatehouse always sent (GoTrue's subjects and SMS_TEMPLATE), byte for byte:
 * with MAILER_LOCALES unset it is the only locale there is, and no existing app's mail changes.
 */
export const BUILT_IN_TEXTS: { readonly [L in MessageLocale]: LocaleTexts } = {
  en: {
    mail: {
      confirmation: { subject: "Confirm Your Signup", heading: "Confirm your signup" },
      invite: { subject: "You have been invited", heading: "You have been invited" },
      magicLink: { subject: "Your Magic Link", heading: "Sign in with this magic link" },
      recovery: { subject: "Reset Your Password", heading: "Reset your password" },
      emailChange: { subject: "Confirm Email Change", heading: "Confirm the change of your email address" },
      reauthentication: { subject: "Confirm reauthentication", heading: "Enter this code to confirm it is you" }
    },
    followLink: "Follow this link",
    enterCode: "Or enter this code:",
    codeLabel: "Code:",
    sms: "Your code is {{ .Code }}",
    confirmPage: {
      title: "Confirm",
      heading: "One more step",
      explanation: "Press the button to continue. The link works only once, and opening this page has not used it.",
      button: "Continue"
    }
  },
  de: {
    mail: {
      confirmation: { subject: "Bestätigen Sie Ihre Registrierung", heading: "Bestätigen Sie Ihre Registrierung" },
      invite: { subject: "Sie wurden eingeladen", heading: "Sie wurden eingeladen" },
      magicLink: { subject: "Ihr Anmeldelink", heading: "Mit diesem Link anmelden" },
      recovery: { subject: "Passwort zurücksetzen", heading: "Setzen Sie Ihr Passwort zurück" },
      emailChange: { subject: "Änderung der E-Mail-Adresse bestätigen", heading: "Bestätigen Sie die Änderung Ihrer E-Mail-Adresse" },
      reauthentication: { subject: "Bestätigen Sie Ihre Identität", heading: "Geben Sie diesen Code ein, um zu bestätigen, dass Sie es sind" }
    },
    followLink: "Diesem Link folgen",
    enterCode: "Oder geben Sie diesen Code ein:",
    codeLabel: "Code:",
    sms: "Ihr Code lautet {{ .Code }}",
    confirmPage: {
      title: "Bestätigen",
      heading: "Noch ein Schritt",
      explanation: "Klicken Sie auf die Schaltfläche, um fortzufahren. Der Link gilt nur einmal, und das Öffnen dieser Seite hat ihn nicht verbraucht.",
      button: "Weiter"
    }
  },
  fr: {
    mail: {
      confirmation: { subject: "Confirmez votre inscription", heading: "Confirmez votre inscription" },
      invite: { subject: "Vous avez été invité", heading: "Vous avez été invité" },
      magicLink: { subject: "Votre lien de connexion", heading: "Connectez-vous avec ce lien magique" },
      recovery: { subject: "Réinitialisez votre mot de passe", heading: "Réinitialisez votre mot de passe" },
      emailChange: { subject: "Confirmez le changement d'adresse e-mail", heading: "Confirmez le changement de votre adresse e-mail" },
      reauthentication: { subject: "Confirmez votre identité", heading: "Saisissez ce code pour confirmer qu'il s'agit bien de vous" }
    },
    followLink: "Suivez ce lien",
    enterCode: "Ou saisissez ce code :",
    codeLabel: "Code :",
    sms: "Votre code est {{ .Code }}",
    confirmPage: {
      title: "Confirmer",
      heading: "Encore une étape",
      explanation: "Appuyez sur le bouton pour continuer. Le lien ne sert qu'une fois, et l'ouverture de cette page ne l'a pas utilisé.",
      button: "Continuer"
    }
  },
  es: {
    mail: {
      confirmation: { subject: "Confirma tu registro", heading: "Confirma tu registro" },
      invite: { subject: "Has recibido una invitación", heading: "Has recibido una invitación" },
      magicLink: { subject: "Tu enlace mágico", heading: "Inicia sesión con este enlace mágico" },
      recovery: { subject: "Restablece tu contraseña", heading: "Restablece tu contraseña" },
      emailChange: { subject: "Confirma el cambio de correo electrónico", heading: "Confirma el cambio de tu dirección de correo electrónico" },
      reauthentication: { subject: "Confirma tu identidad", heading: "Introduce este código para confirmar que eres tú" }
    },
    followLink: "Sigue este enlace",
    enterCode: "O introduce este código:",
    codeLabel: "Código:",
    sms: "Tu código es {{ .Code }}",
    confirmPage: {
      title: "Confirmar",
      heading: "Un paso más",
      explanation: "Pulsa el botón para continuar. El enlace solo sirve una vez, y abrir esta página no lo ha usado.",
      button: "Continuar"
    }
  },
  pt: {
    mail: {
      confirmation: { subject: "Confirme a sua inscrição", heading: "Confirme a sua inscrição" },
      invite: { subject: "Recebeu um convite", heading: "Recebeu um convite" },
      magicLink: { subject: "O seu link mágico", heading: "Entre com este link mágico" },
      recovery: { subject: "Redefina a sua senha", heading: "Redefina a sua senha" },
      emailChange: { subject: "Confirme a alteração de e-mail", heading: "Confirme a alteração do seu endereço de e-mail" },
      reauthentication: { subject: "Confirme a sua identidade", heading: "Digite este código para confirmar que é você" }
    },
    followLink: "Siga este link",
    enterCode: "Ou digite este código:",
    codeLabel: "Código:",
    sms: "O seu código é {{ .Code }}",
    confirmPage: {
      title: "Confirmar",
      heading: "Só mais um passo",
      explanation: "Toque no botão para continuar. O link só funciona uma vez, e abrir esta página não o utilizou.",
      button: "Continuar"
    }
  }
}
